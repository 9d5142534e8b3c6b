"""Cove's additions to the IPython kernel, installed by the profile's startup files.

Startup files run in the user's namespace, so they only call into this package; the package is
imported from the startup directory while IPython runs them and stays in sys.modules afterwards.
Nothing here imports pandas, matplotlib or PIL: kernel start must stay fast.
"""


def install_results(shell):
    from . import formatters, matplotlib_setup

    matplotlib_setup.install(shell)
    formatters.install(shell)


def install_images(shell):
    from . import images

    images.install(shell)
