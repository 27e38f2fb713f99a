"""Suites are what users run: each starts (or reuses) a real cluster through the plugin's fixtures."""
