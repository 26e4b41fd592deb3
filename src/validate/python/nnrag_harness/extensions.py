# Compiled operator libraries loaded once per validation process, by content. A library
# that registers operators when it is loaded (a TORCH_LIBRARY static initializer, as
# torchvision's `_C_stable.so`) refuses a second registration of the same operator names
# and ends the process (std::terminate: SIGABRT). Two copies of one library are loaded
# when a repository's checkout holds its built libraries and the environment also has
# the repository installed: a zygote imports the original from the checkout, hides it
# (stash.py), and the candidate's `import torchvision` then finds the installed package,
# whose own copy of the library is another file with the same bytes. torch.ops.load_library
# of a file whose content equals one already loaded is therefore answered by the one
# loaded: its operators are registered already, and they are the same operators.
import hashlib
import os

_LOADED = {}  # sha256 of a loaded library's bytes -> the path it was loaded from


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_each_library_once(torch):
    """Wrap torch.ops.load_library (which torch.classes.load_library calls too) so that a
    library with the bytes of one already loaded is not loaded again."""
    ops = getattr(torch, "ops", None)
    original = getattr(ops, "load_library", None)
    if original is None or getattr(original, "_nnrag_once", False):
        return

    def load_library(path):
        real = os.path.realpath(str(path))
        try:
            digest = _digest(real)
        except OSError:
            return original(path)  # torch reports the missing file itself
        first = _LOADED.get(digest)
        if first is not None and first != real:
            try:
                ops.loaded_libraries.add(path)
            except Exception:  # noqa: BLE001
                pass
            return None
        result = original(path)
        _LOADED.setdefault(digest, real)
        return result

    load_library._nnrag_once = True
    ops.load_library = load_library
