# How a failure is classified (src/validate/README.md "Stages and categories"): the
# exception, the stage and the files of its traceback give one failure category; error
# and traceback text capped for the report.
import errno
import os
import re
import socket
import traceback

MAX_ERROR_CHARS = 2000
MAX_TRACE_CHARS = 6000

# errno values that mean "the sandbox or a limit said no" (PEP 3151 OSError subclasses
# carry these): read-only filesystem, permission, no network, resource limits.
SANDBOX_ERRNOS = {
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.ENETUNREACH,
    errno.ENETDOWN,
    errno.EHOSTUNREACH,
    errno.ECONNREFUSED,
    errno.EAFNOSUPPORT,
    errno.EFBIG,
    errno.EAGAIN,
    errno.EADDRNOTAVAIL,
    errno.ENOSPC,
    errno.EDQUOT,
}


NATIVE_NAME = re.compile(r"(^|[._])(_C|_ext|_cuda|_cpp|_kernels?|cuda|_native|_ops)($|[._])|cuda|_cpp$|_ext$")
SHAPE_MSG = re.compile(
    r"shape|size mismatch|sizes? of tensors|must match the size|mat1 and mat2|cannot be multiplied|"
    r"invalid for input of size|dimension|expected .*(dim|channel|size|input)|"
    r"to have \d+ channels|out of range|not broadcastable|unflatten|but got .*(size|dim|channel)|"
    r"number of (elements|dims)|input.*(channels|features)|doesn't match|does not match",
    re.I,
)
# a layer that only runs on a GPU: CUDA asked for where torch has none (`.cuda()`, a CUDA
# device, CUDA-only kernels), nn.SyncBatchNorm on a CPU tensor or outside a process group
GPU_MSG = re.compile(
    r"Torch not compiled with CUDA|Found no NVIDIA driver|No CUDA GPUs are available|CUDA driver initialization failed|"
    r"torch\.cuda\.is_available\(\) is False|SyncBatchNorm expected input tensor to be on GPU|"
    r"Default process group has not been initialized|SyncBatchNorm is only supported|"
    r"(could not|not able to) (find|use) (a )?CUDA|CUDA (is )?(not available|unavailable)|"
    r"on the same device.*cuda",
    re.I,
)
MEMORY_MSG = re.compile(
    r"can't allocate memory|not enough memory|out of memory|DefaultCPUAllocator|std::bad_alloc|Cannot allocate memory",
    re.I,
)


class Classifier:
    def __init__(self, masked):
        # folders the sandbox hides (home folders): a missing file under one of them
        # is the sandbox saying no, not an ordinary missing file
        self.masked = [m.rstrip("/") for m in masked if m and m != "/"]

    def _masked_path(self, filename):
        if not isinstance(filename, str):
            return False
        f = os.path.abspath(os.path.expanduser(filename)) if filename.startswith("~") else filename
        return any(f == m or f.startswith(m + "/") for m in self.masked)

    def classify(self, e, stage, tb_files=()):
        msg = str(e)
        if isinstance(e, MemoryError) or MEMORY_MSG.search(msg):
            return "memory"
        if isinstance(e, RecursionError):
            return "runtime-error"
        if GPU_MSG.search(msg):
            return "needs-gpu"
        if isinstance(e, AttributeError) and PLUGIN_DEVICE_ATTR.match(msg):
            # `x.is_musa`, `x.is_npu`: a device query torch's Tensor does not have; that
            # device's torch plugin (torch_musa, torch_npu, torch_mlu) adds it. Code that
            # reads it runs only where that plugin is, or on an accelerator tensor an
            # earlier `x.is_cuda or ...` answered for: not on a CPU tensor here
            return "needs-gpu"
        if isinstance(e, NameError) and not isinstance(e, UnboundLocalError):
            return "unresolved-name"
        if NO_CPU_KERNEL.search(msg):
            # a compiled operator without a CPU kernel (torch's dispatcher: "Could not run
            # 'ns::op' with arguments from the 'CPU' backend"; extensions that raise
            # "not implemented on CPU"): the block needs a GPU build, it is not broken
            return "native-op-no-cpu"
        if any("cpp_extension" in f for f in tb_files):
            return "native-extension"
        if isinstance(e, ImportError):
            name = getattr(e, "name", None) or ""
            if re.search(r"\.so\b|shared object|undefined symbol|DLL load", msg):
                return "native-extension"
            if isinstance(e, ModuleNotFoundError) and name and NATIVE_NAME.search(name):
                return "native-extension"
            # torch imports, but not this submodule or name (torch.nn.attention, `from
            # torch.compiler import …`): another torch version has it
            if TORCH_MODULE.match(name) or TORCH_IMPORT.search(msg):
                return "torch-version"
            return "missing-extern"
        if isinstance(e, OSError):
            if re.search(r"shared object|\.so\b", msg):
                return "native-extension"
            if isinstance(e, (socket.gaierror, socket.herror)):
                return "sandbox-denied"
            if e.errno in SANDBOX_ERRNOS:
                return "sandbox-denied"
            if isinstance(e, FileNotFoundError) and (
                self._masked_path(e.filename) or self._masked_path(getattr(e, "filename2", None))
            ):
                return "sandbox-denied"
        if isinstance(e, AttributeError) and TORCH_ATTR.match(msg):
            # torch imported but lacks the API (torch.compiler on 1.13): a torch version
            # that has it is needed, not a missing package
            return "torch-version"
        if isinstance(e, AttributeError) and re.match(r"module '[\w.]+' has no attribute", msg):
            # an extern module of another version lacks the API (torch.nn.RMSNorm on 1.13)
            return "missing-extern"
        if (
            stage == "forward"
            and isinstance(e, (RuntimeError, ValueError, IndexError, TypeError, AssertionError))
            and SHAPE_MSG.search(msg)
        ):
            return "forward-shape"
        if stage == "forward" and isinstance(e, ValueError) and "values to unpack" in msg:
            return "forward-shape"  # b, c, h, w = x.shape on a tensor of another rank
        if stage == "forward" and isinstance(e, AssertionError) and SHAPE_LINE.search(last_line(e)):
            return "forward-shape"  # assert x.shape[-1] == self.dim
        if stage == "parse" or stage == "compile":
            return "syntax" if isinstance(e, SyntaxError) else "runtime-error"
        return "runtime-error"


# `module 'torch' has no attribute 'compiler'`, `module 'torch.nn' has no attribute 'RMSNorm'`
TORCH_ATTR = re.compile(r"module 'torch(\.[\w.]+)?' has no attribute")
# ModuleNotFoundError.name of a torch submodule (`torch.nn.attention`)
TORCH_MODULE = re.compile(r"torch\.")
# `cannot import name 'x' from 'torch.y'` (ImportError.name is the module there)
TORCH_IMPORT = re.compile(r"cannot import name '\w+' from 'torch(\.[\w.]+)?'")
NO_CPU_KERNEL = re.compile(
    r"Could not run '[^']+' with arguments from the 'CPU' backend|not (?:yet )?implemented (?:on|for) (?:the )?CPU|"
    # an extension's own per-device dispatch table without a CPU entry
    # ("roi_align_forward_impl: implementation for device cpu not found.")
    r"implementation for device cpu not found",
    re.I,
)
PLUGIN_DEVICE_ATTR = re.compile(r"'(Tensor|Parameter)' object has no attribute 'is_[a-z]{2,5}'")
SHAPE_LINE = re.compile(r"shape|size|dim|\bH\b|\bW\b|len\(|numel|channels", re.I)


def last_line(e):
    """Source text of the line that raised e (the innermost frame)."""
    try:
        fr = traceback.extract_tb(e.__traceback__)
        return (fr[-1].line or "") if fr else ""
    except BaseException:  # noqa: BLE001
        return ""


def fmt_error(e):
    try:
        s = "%s: %s" % (type(e).__name__, e)
    except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
        s = "%s: <message not printable>" % type(e).__name__
    if len(s) > MAX_ERROR_CHARS:
        # cut from the middle: the type in front, the end of the message kept
        s = s[: MAX_ERROR_CHARS // 2] + "…" + s[-(MAX_ERROR_CHARS // 2) :]
    return s


def fmt_trace(e):
    try:
        s = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    except BaseException:  # noqa: BLE001
        s = fmt_error(e)
    return s[-MAX_TRACE_CHARS:]


def tb_files(e):
    out = []
    tb = e.__traceback__
    while tb is not None:
        out.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return out
