"""Document storage for dispute evidence (issue 7): signed addresses first."""
