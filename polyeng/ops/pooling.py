"""placeholder"""
SPECS = []
