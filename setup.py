"""Packages of kafka-share-harness (everything else is in pyproject.toml).

The pytest plugin lives in the `fixtures/` folder (the project's layout names it) but is installed
as `ksh_fixtures`: `fixtures` is a popular PyPI package, and the harness must not claim its import
name for everyone who installs it. pyproject.toml alone cannot map one folder to another package
name beside `packages.find`, hence this file.
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["harness", "harness.*"]) + ["ksh_fixtures"],
      package_dir={"ksh_fixtures": "fixtures"})
