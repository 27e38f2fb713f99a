"""Reports: the run directory every run leaves behind."""
