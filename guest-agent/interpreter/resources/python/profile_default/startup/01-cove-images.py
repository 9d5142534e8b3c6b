# Cove: PIL images show themselves as results. image.show() displays the image (a png result)
# instead of starting a viewer, and image.save("<path>") displays it too. PIL is patched when the
# user's code first imports it, not before.
__import__("_cove_ipython").install_images(get_ipython())  # noqa: F821
