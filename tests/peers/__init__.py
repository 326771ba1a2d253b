"""Test peers standing in for processes that cannot run here (the multipooler)."""
