"""Packages of kafka-share-harness (everything else is in pyproject.toml).

The pytest plugin lives in the `fixtures/` folder (the project's layout names it) but is installed
as `ksh_fixtures`: `fixtures` is a popular PyPI package, and the harness must not claim its import
name for everyone who installs it. The suites (`suites/`) ship the same way, as `ksh_suites`
(`harness.sys.suites` finds them; `pytest --pyargs ksh_suites` collects them). pyproject.toml alone cannot map one folder to another package
name beside `packages.find`, hence this file.
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["harness", "harness.*"]) + ["ksh_fixtures", "ksh_suites", "ksh_suites.chaos",
                                                                   "ksh_suites.conformance"],
      package_dir={"ksh_fixtures": "fixtures", "ksh_suites": "suites"})
