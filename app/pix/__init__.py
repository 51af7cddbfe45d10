"""Pix building blocks with no I/O: BR Code payloads, QR images, keys and tax ids."""
