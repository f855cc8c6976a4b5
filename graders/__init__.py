"""graders"""
