"""ckpt's SCR-compatible API for Python: the module `scr` of SCR 3.1.

A Python program checkpoints through ckpt's libscr.so the way SCR's
Python module lets it do through SCR's:

    from mpi4py import MPI     # initialises MPI; scr needs it first
    import scr

    scr.init()
    name = scr.have_restart()          # the newest checkpoint, or None
    if name is not None:
        scr.start_restart()
        with open(scr.route_file("state.bin"), "rb") as f:
            ...
        scr.complete_restart(True)
    scr.start_output("step-10", scr.FLAG_CHECKPOINT)
    with open(scr.route_file("state.bin"), "wb") as f:
        ...
    scr.complete_output(True)
    scr.finalize()

Every call except route_file is collective over MPI_COMM_WORLD; a call
that fails raises RuntimeError, and a call made in the wrong state ends
the job (the library calls MPI_Abort), as in SCR. See docs/C-API.md.

Beyond SCR's functions the module has a small Pythonic layer:

    with scr.output("step-10", scr.FLAG_CHECKPOINT) as out:
        save(out.route("state.bin"))   # an exception completes it invalid

    for r in scr.restarts():           # newest first, until one loads
        with r:
            load(r.route("state.bin"))

The module loads libscr.so through ctypes (no dependency): from
CKPT_LIBSCR when set, else from two directories above this file
(PREFIX/lib/libscr.so for PREFIX/lib/python/scr/__init__.py, where
scripts/install-capi.sh puts it).
"""

import ctypes
import os

__all__ = [
    "FLAG_NONE", "FLAG_CHECKPOINT", "FLAG_OUTPUT", "SUCCESS", "MAX_FILENAME",
    "config", "init", "finalize", "route_file", "have_restart",
    "start_restart", "complete_restart", "need_checkpoint",
    "start_checkpoint", "complete_checkpoint", "start_output",
    "complete_output", "should_exit", "current", "drop", "delete",
    "get_version", "output", "Output", "restarts", "Restart",
]

# scr.h's constants.
SUCCESS = 0
MAX_FILENAME = 1024
FLAG_NONE = 0
FLAG_CHECKPOINT = 1
FLAG_OUTPUT = 2


def _library_path():
    path = os.environ.get("CKPT_LIBSCR")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, os.pardir, os.pardir, "libscr.so"))


def _load():
    path = _library_path()
    try:
        # RTLD_GLOBAL: libscr brings libmpi, whose plugins look up its
        # symbols globally (mpi4py loads it the same way).
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise ImportError(
            "scr: cannot load libscr.so from %s (%s); install it with "
            "scripts/install-capi.sh or set CKPT_LIBSCR to its path" % (path, e)) from e
    c_int_p = ctypes.POINTER(ctypes.c_int)
    protos = {
        "SCR_Init": (ctypes.c_int, []),
        "SCR_Finalize": (ctypes.c_int, []),
        # c_void_p, not c_char_p: the string is malloc'd and must be freed.
        "SCR_Config": (ctypes.c_void_p, [ctypes.c_char_p]),
        "SCR_Route_file": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p]),
        "SCR_Have_restart": (ctypes.c_int, [c_int_p, ctypes.c_char_p]),
        "SCR_Start_restart": (ctypes.c_int, [ctypes.c_char_p]),
        "SCR_Complete_restart": (ctypes.c_int, [ctypes.c_int]),
        "SCR_Need_checkpoint": (ctypes.c_int, [c_int_p]),
        "SCR_Start_checkpoint": (ctypes.c_int, []),
        "SCR_Complete_checkpoint": (ctypes.c_int, [ctypes.c_int]),
        "SCR_Start_output": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
        "SCR_Complete_output": (ctypes.c_int, [ctypes.c_int]),
        "SCR_Current": (ctypes.c_int, [ctypes.c_char_p]),
        "SCR_Drop": (ctypes.c_int, [ctypes.c_char_p]),
        "SCR_Delete": (ctypes.c_int, [ctypes.c_char_p]),
        "SCR_Get_version": (ctypes.c_char_p, []),
        "SCR_Should_exit": (ctypes.c_int, [c_int_p]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib, path


_lib, _path = _load()
_libc = ctypes.CDLL(None)
_libc.free.restype = None
_libc.free.argtypes = [ctypes.c_void_p]
_mpi_up = False


def _require_mpi(call):
    """Fails clearly, instead of letting MPI abort the process, when MPI is
    not initialised before a collective call that may be the first."""
    global _mpi_up
    if _mpi_up:
        return
    try:
        initialized = _lib.MPI_Initialized  # libmpi, a dependency of libscr
    except AttributeError:
        return  # an MPI without the symbol where we can see it: cannot tell
    flag = ctypes.c_int(0)
    initialized(ctypes.byref(flag))
    if not flag.value:
        raise RuntimeError(
            "scr.%s: MPI is not initialised: run 'from mpi4py import MPI' first" % call)
    _mpi_up = True


def _name(name):
    """A dataset or file name as C wants it: bytes, or None for NULL."""
    if name is None:
        return None
    return os.fsencode(name)


def _check(rc, call):
    if rc != SUCCESS:
        raise RuntimeError("%s failed (returned %d)" % (call, rc))


def config(conf):
    """Sets ("KEY=VALUE"), unsets ("KEY=") or queries ("KEY") SCR
    parameters, several at once when separated by blanks. Returns the
    queried value as a str, or None (for a set or unset, or a parameter
    with no value). Sets must come before init()."""
    _require_mpi("config")
    p = _lib.SCR_Config(_name(conf))
    if not p:
        return None
    try:
        return os.fsdecode(ctypes.string_at(p))
    finally:
        _libc.free(p)  # the caller's copy (SCR's own module leaks it)


def init(params=None):
    """Initialises the library (SCR_Init); RuntimeError if it fails, as
    it does with SCR_ENABLE=0. params, as in SCR's module, is passed to
    config() first: a str, a list of them, or a dict of KEY: value (None
    unsets KEY)."""
    if params:
        if isinstance(params, str):
            config(params)
        elif isinstance(params, (list, tuple)):
            for item in params:
                config(str(item))
        elif isinstance(params, dict):
            for key, value in params.items():
                config("%s=%s" % (key, "" if value is None else value))
        else:
            raise RuntimeError(
                "scr.init: params must be a str, list or dict, not %s" % type(params).__name__)
    _require_mpi("init")
    _check(_lib.SCR_Init(), "SCR_Init")


def finalize():
    """Shuts the library down (SCR_Finalize), flushing what is due."""
    _check(_lib.SCR_Finalize(), "SCR_Finalize")


def route_file(fname):
    """The path at which to write (in an output phase, which registers the
    file) or read (in a restart phase) the file fname, a str or path.
    Not collective. RuntimeError when it fails, as in a restart phase for a
    file the checkpoint does not have."""
    buf = ctypes.create_string_buffer(MAX_FILENAME)
    _check(_lib.SCR_Route_file(_name(fname), buf), "SCR_Route_file")
    return os.fsdecode(buf.value)


def have_restart():
    """The name of the checkpoint to restart from, or None."""
    flag = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(MAX_FILENAME)
    _check(_lib.SCR_Have_restart(ctypes.byref(flag), buf), "SCR_Have_restart")
    if not flag.value:
        return None
    return os.fsdecode(buf.value)


def start_restart():
    """Opens the restart phase and returns the checkpoint's name."""
    buf = ctypes.create_string_buffer(MAX_FILENAME)
    _check(_lib.SCR_Start_restart(buf), "SCR_Start_restart")
    return os.fsdecode(buf.value)


def complete_restart(valid=True):
    """Closes the restart phase; valid says whether this process read its
    part. True when every process did; when one did not, the checkpoint is
    marked failed and have_restart() offers the next older one."""
    return _lib.SCR_Complete_restart(1 if valid else 0) == SUCCESS


def need_checkpoint():
    """Whether a checkpoint is due (by SCR_CHECKPOINT_INTERVAL, _SECONDS,
    _OVERHEAD or a halt condition)."""
    flag = ctypes.c_int(0)
    _check(_lib.SCR_Need_checkpoint(ctypes.byref(flag)), "SCR_Need_checkpoint")
    return bool(flag.value)


def start_checkpoint():
    """start_output(None, FLAG_CHECKPOINT), SCR's older call (not in SCR's
    Python module)."""
    _check(_lib.SCR_Start_checkpoint(), "SCR_Start_checkpoint")


def complete_checkpoint(valid=True):
    """complete_output(valid) for start_checkpoint()."""
    return _lib.SCR_Complete_checkpoint(1 if valid else 0) == SUCCESS


def start_output(name, flags):
    """Opens an output phase for the dataset name (None or "" names it
    scr.dataset.<id>) with flags, FLAG_CHECKPOINT and/or FLAG_OUTPUT. The
    name and flags must be the same on every process."""
    _check(_lib.SCR_Start_output(_name(name), int(flags)), "SCR_Start_output")


def complete_output(valid=True):
    """Closes the output phase; valid says whether this process wrote its
    part. True when every process did."""
    return _lib.SCR_Complete_output(1 if valid else 0) == SUCCESS


def should_exit():
    """Whether the program should stop now (a halt, or the end of its
    allocation near)."""
    flag = ctypes.c_int(0)
    _check(_lib.SCR_Should_exit(ctypes.byref(flag)), "SCR_Should_exit")
    return bool(flag.value)


def current(name):
    """Makes the checkpoint name the one to restart from."""
    _check(_lib.SCR_Current(_name(name)), "SCR_Current")


def drop(name):
    """Forgets the dataset name, keeping its files."""
    _check(_lib.SCR_Drop(_name(name)), "SCR_Drop")


def delete(name):
    """Deletes the dataset name and its files."""
    _check(_lib.SCR_Delete(_name(name)), "SCR_Delete")


def get_version():
    """The SCR version the library implements ("v3.1.0")."""
    return _lib.SCR_Get_version().decode()


class Output:
    """An output phase as a context manager: made by output(), started on
    entering the with block, completed on leaving it. valid may be set to
    False inside the block to vote the dataset invalid; an exception
    leaving the block votes invalid too (and goes on). ok is the outcome:
    None until completed, then True when every process wrote its part."""

    def __init__(self, name, flags):
        self.name = name
        self.flags = flags
        self.valid = True
        self.ok = None

    def route(self, fname):
        """route_file(fname): the path at which to write fname."""
        return route_file(fname)

    def __enter__(self):
        start_output(self.name, self.flags)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.ok = complete_output(self.valid and exc_type is None)
        return False


def output(name=None, flags=FLAG_CHECKPOINT):
    """An output phase for a with block:

        with scr.output("step-10", scr.FLAG_CHECKPOINT) as out:
            save(out.route("state.bin"))

    flags defaults to FLAG_CHECKPOINT (a checkpoint to restart from)."""
    return Output(name, flags)


class Restart:
    """A restart phase opened by restarts(), for one checkpoint: name is
    its name, route(fname) the path to read fname from. As a context
    manager it completes the phase when the with block ends, valid unless
    the block set valid to False or raised (the exception goes on). ok is
    the outcome: None until completed, then True when every process read
    its part."""

    def __init__(self, name):
        self.name = name
        self.valid = True
        self.ok = None

    def route(self, fname):
        """route_file(fname): the path from which to read fname."""
        return route_file(fname)

    def complete(self, valid=None):
        """Completes the phase once (later calls return the first outcome)
        with valid, or self.valid when valid is None."""
        if self.ok is None:
            self.ok = complete_restart(self.valid if valid is None else valid)
        return self.ok

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.complete(self.valid and exc_type is None)
        return False


def restarts():
    """Yields a Restart for each checkpoint on offer, newest first, until
    one is restored (every process read its part):

        for r in scr.restarts():
            with r:
                state = load(r.route("state.bin"))
        # r.ok is True for the checkpoint the program restarted from

    A checkpoint that fails on any process is marked failed and the next
    older one is offered. A Restart not completed by the loop's body is
    completed with its valid when the loop goes on or is left."""
    while True:
        if have_restart() is None:
            return
        r = Restart(start_restart())
        try:
            yield r
        finally:
            r.complete()
        if r.ok:
            return
