"""Payment instruments for methods other than Pix: pure builders and validators with their
check digits.
"""
