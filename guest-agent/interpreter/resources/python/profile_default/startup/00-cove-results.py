# Cove: E2B's rich results. e2b/data for pandas DataFrames, application/json for list and dict
# results, e2b/chart for matplotlib figures, and a quiet matplotlib. The code lives in the
# _cove_ipython package beside this file so that nothing is left in the user's namespace, and it
# imports pandas and matplotlib only when one of their objects is displayed.
__import__("_cove_ipython").install_results(get_ipython())  # noqa: F821
