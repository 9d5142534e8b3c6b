"""PIL images as results: Image.show() displays the image instead of starting an external viewer
(a sandbox has no display), and Image.save() to a path displays it as well, as E2B does."""
import functools

from . import import_hooks

# Modes Pillow can write as PNG; others are converted to their base mode (L or RGB) first.
_PNG_MODES = {"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"}


def install(shell):
    import_hooks.on_import("PIL.Image", _patch)


def _display(image_module, image):
    from IPython.display import display

    if image.mode not in _PNG_MODES:
        image = image.convert(image_module.getmodebase(image.mode))
    display(image)


def _patch(image_module):
    cls = image_module.Image
    if getattr(cls.show, "_cove_wrapped", False):
        return
    original_save = cls.save

    def show(self, title=None):
        _display(image_module, self)

    @functools.wraps(original_save)
    def save(self, fp, format=None, **params):
        result = original_save(self, fp, format, **params)
        if isinstance(fp, str):
            _display(image_module, self)
        return result

    show.__doc__ = "Displays this image as a result (Cove: no external viewer)."
    show._cove_wrapped = True
    cls.show = show
    cls.save = save
