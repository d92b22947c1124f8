"""Why a test module of the RL stages skips: an optional extra it imports is not installed.

CI installs both extras and runs every module; the device's image has neither veRL nor Ray, and
`scripts/gpu_suite.sh tests` collects these modules there.
"""

VERL_MISSING = "needs veRL, the rl extra: pip install -e '.[rl]'"
RAY_MISSING = "needs Ray, the ray extra: pip install -e '.[ray]'"
