"""Caches that survive the process: engine and primitive cache blobs on disk.

oneDNN can hand out what it compiled as bytes (``primitive.get_cache_blob()``,
``ocl_interop.get_engine_cache_blob(engine)``) and build the same object from
them later, keyed by ``primitive_desc.get_cache_blob_id()`` and
``ocl_interop.get_engine_cache_blob_id(device)`` (OpenVINO keys its kernel
cache the same way). :class:`persistent` keeps those blobs in a directory, so
that a new process loads kernels instead of compiling them::

    cache = dnnl.cache.persistent("~/.cache/my_app/onednn")
    engine = cache.engine(device, context)     # dnnl.engine
    matmul = cache.primitive(matmul_pd)        # dnnl.matmul

or for every primitive the process makes (``dnnl.<family>(pd)`` in any code,
``dnnl.ops``), installed::

    dnnl.cache.install("~/.cache/my_app/onednn")   # or cache.install()
    matmul = dnnl.matmul(matmul_pd)                # loaded from the directory, or compiled and stored

A file that is damaged, truncated or not the key's (another primitive's blob
copied over it, a file of another program) is refused by the binding's checks
of the blob's header (``dnnl.error``, ``invalid_arguments``) before oneDNN reads
it, counted in ``rejected``, and replaced by a freshly built blob. A path that
is no regular file (a directory, a FIFO, a device) is refused the same way
without being read (opened without blocking, checked on the descriptor). Files are
written whole (a temporary file in the same directory, then ``os.replace``),
so processes sharing the directory never read a partial file. Once the
directory exists, failing to write it (read-only, full, removed) never
raises: the object is built and returned, the failure is counted in
``store_errors`` and reported once as a ``RuntimeWarning``.
"""

import atexit
import errno
import hashlib
import os
import stat
import threading
import uuid
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from . import _core

if TYPE_CHECKING:  # pyopencl is imported after the device choice (emulation.ensure_device)
    import pyopencl

__all__ = ["install", "installed", "persistent", "uninstall"]

PathLike = Union[str, "os.PathLike[str]"]
Device = Union["pyopencl.Device", int]
Context = Union["pyopencl.Context", int]


# Descriptors an installed cache remembers having served (their primitives
# are in oneDNN's in-memory cache, whose default capacity is 1024).
_SERVED_IDS = 4096


def _key(blob_id: bytes) -> str:
    """A file-name-safe key for a cache blob id of any length."""
    return hashlib.sha256(blob_id).hexdigest()


def _engine_identity(pd: "_core.primitive_desc") -> Any:
    """What oneDNN's in-memory primitive cache tells the engines of
    descriptors apart by: the OpenCL context and device (another engine on
    the same pair shares its entries)."""
    engine = pd.get_engine()
    try:
        return (_core.ocl_interop.get_context(engine).int_ptr,
                _core.ocl_interop.get_device(engine).int_ptr)
    except _core.error:  # not an OpenCL engine: its handle
        return hash(engine)


def _family_of(pd: "_core.primitive_desc") -> Any:
    """The primitive class whose ``primitive_desc`` `pd` is (``dnnl.matmul``
    for a ``dnnl.matmul.primitive_desc``)."""
    for cls in type(pd).__mro__:
        owner_name, _, name = cls.__qualname__.rpartition(".")
        owner = getattr(_core, owner_name, None) if name == "primitive_desc" else None
        if owner is not None and getattr(owner, "primitive_desc", None) is cls:
            return owner
    raise TypeError(f"expected the primitive_desc of a primitive family (e.g. "
                    f"dnnl.matmul.primitive_desc), got {type(pd).__name__}")


class persistent:
    """A directory of engine and primitive cache blobs, reused across processes.

    ``persistent(directory)`` creates `directory` (and its parents) if needed;
    an ``OSError`` says why when it cannot (a file in the way, no permission).
    After that nothing it does raises for the directory's sake: files that
    cannot be read are rebuilt, files that cannot be written are skipped
    (counted in ``store_errors``, one ``RuntimeWarning``). Errors of oneDNN
    itself (no implementation, no device) propagate as from the core API.

    Counters, for users and tests (one object may be used from several
    threads; the counters stay exact):

    - ``hits``: objects made from a stored blob;
    - ``misses``: objects built because no blob was stored;
    - ``rejected``: stored files refused (damaged, truncated, another key's,
      unreadable, no regular file, or refused by oneDNN); the object is
      built and the file replaced (a directory in the way cannot be: a
      store error);
    - ``stored``: blobs written;
    - ``store_errors``: blobs that could not be written;
    - ``repeats``: creations, while installed (:func:`install`), of a
      descriptor the cache already served in this process for the same
      OpenCL context and device, left to oneDNN's in-memory primitive cache.

    Files: ``engine-<sha256 of the engine id>.blob`` and
    ``primitive-<sha256 of the descriptor id>.blob``. The ids name the
    device, driver and oneDNN version, so a directory can be shared by
    devices and library versions; nothing is ever deleted (remove the
    directory to empty the cache).
    """

    def __init__(self, directory: PathLike) -> None:
        given = os.fspath(directory)  # TypeError for what is no path
        if isinstance(given, bytes):  # as os's functions take it
            given = os.fsdecode(given)
        if not given:
            raise ValueError("directory must not be empty (give '.' for the current directory)")
        path = os.path.abspath(os.path.expanduser(given))
        os.makedirs(path, exist_ok=True)
        self.directory: str = path
        self.hits = self.misses = self.rejected = self.stored = self.store_errors = 0
        self.repeats = 0
        self._served_ids: "OrderedDict[tuple[Any, bytes], None]" = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False
        self._replaced: Optional[persistent] = None  # what install() replaced, for __exit__

    def __repr__(self) -> str:
        return (f"dnnl.cache.persistent({self.directory!r}: hits={self.hits}, misses={self.misses}, "
                f"rejected={self.rejected}, stored={self.stored}, store_errors={self.store_errors}, "
                f"repeats={self.repeats})")

    def counts(self) -> Dict[str, int]:
        """The counters as a dict (a consistent snapshot)."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "rejected": self.rejected,
                    "stored": self.stored, "store_errors": self.store_errors,
                    "repeats": self.repeats}

    # ------------------------------------------------------------ engines

    def engine_path(self, device: Device) -> str:
        """The file that holds (or would hold) the engine blob of `device`."""
        blob_id = _core.ocl_interop.get_engine_cache_blob_id(device)
        return os.path.join(self.directory, f"engine-{_key(blob_id)}.blob")

    def engine(self, device: Device, context: Context) -> "_core.engine":
        """``ocl_interop.make_engine(device, context, blob)`` with the blob
        stored for ``get_engine_cache_blob_id(device)``; without one (or with
        a bad one), ``make_engine(device, context)``, and its blob is stored.
        Arguments as for ``make_engine``."""
        oi = _core.ocl_interop
        path = self.engine_path(device)
        data = self._read(path)
        if data is not None:
            try:
                # The binding checks the blob (its header names the device's
                # id, a checksum covers oneDNN's bytes) before oneDNN reads it.
                engine = oi.make_engine(device, context, data)
            except _core.error:
                self._count("rejected")
            else:
                self._count("hits")
                return engine
        else:
            self._count("misses")
        engine = oi.make_engine(device, context)
        blob = oi.get_engine_cache_blob(engine)
        if blob:  # b"": oneDNN compiled nothing worth storing
            self._write(path, blob)
        return engine

    # --------------------------------------------------------- primitives

    def primitive_path(self, pd: "_core.primitive_desc") -> str:
        """The file that holds (or would hold) the blob of `pd`'s primitive."""
        blob_id = pd.get_cache_blob_id()
        if not blob_id:  # a blob keyed so would match any such descriptor
            raise _core._error(_core.status.unimplemented, "oneDNN gives this primitive "
                               "descriptor no cache blob id, so it has no cache blob")
        return os.path.join(self.directory, f"primitive-{_key(blob_id)}.blob")

    def primitive(self, pd: "_core.primitive_desc") -> "_core.primitive":
        """The primitive of `pd` (a ``dnnl.<family>``, as ``dnnl.<family>(pd)``
        gives), loaded from the blob stored for ``pd.get_cache_blob_id()``;
        without one (or with a bad one) compiled, and its blob stored."""
        return self._served(pd, _family_of(pd))

    def _serve(self, pd: "_core.primitive_desc") -> "_core.primitive":
        """The installed hook (see :func:`install`): as :meth:`primitive`, for
        any descriptor (the compiled module takes the primitive's handle),
        except for a descriptor this cache already served in this process:
        that one is left to oneDNN's in-memory primitive cache (a hit there
        takes microseconds; a blob is always rebuilt), and counted in
        ``repeats``."""
        try:
            blob_id = pd.get_cache_blob_id()
            key: Optional[tuple[Any, bytes]] = (_engine_identity(pd), blob_id) if blob_id else None
        except _core.error:
            key = None
        if key is not None:
            with self._lock:
                seen = key in self._served_ids
                if seen:
                    self._served_ids.move_to_end(key)
                    self.repeats += 1
            if seen:
                return _core.primitive(pd)
        primitive = self._served(pd, _core.primitive)
        if key is not None:
            with self._lock:
                self._served_ids[key] = None
                if len(self._served_ids) > _SERVED_IDS:
                    self._served_ids.popitem(last=False)
        return primitive

    def _served(self, pd: "_core.primitive_desc", make: Any) -> "_core.primitive":
        try:
            path = self.primitive_path(pd)
        except _core.error:  # oneDNN gives the descriptor no id: nothing to key a blob by
            self._count("misses")
            return make(pd)
        data = self._read(path)
        if data is not None:
            try:
                # The binding checks the blob (its header names the descriptor's
                # id, a checksum covers oneDNN's bytes) before oneDNN reads it.
                primitive = make(pd, data)
            except _core.error:
                self._count("rejected")
            else:
                self._count("hits")
                return primitive
        else:
            self._count("misses")
        primitive = make(pd)  # compiled: a creation the hook makes does not call it again
        try:
            blob = primitive.get_cache_blob()
        except _core.error:  # oneDNN cannot read this primitive's kernels back
            self._count("store_errors")
        else:
            self._write(path, blob)
        return primitive

    # ------------------------------------------------ for the whole process

    def install(self) -> "persistent":
        """Makes this cache serve every primitive the process creates from
        now on (see :func:`install`); returns it."""
        return install(self)

    def uninstall(self) -> None:
        """Stops this cache serving the process, if it does."""
        with _install_lock:
            if _installed is not self:
                return
        uninstall()

    def __enter__(self) -> "persistent":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        """Ends a ``with`` block: if this cache is installed, the cache its
        :func:`install` replaced is installed again (none: uninstalled)."""
        global _installed
        with _install_lock:
            if _installed is not self:
                return
            previous, self._replaced = self._replaced, None
            _core._set_primitive_creation_hook(previous._serve if previous else None)
            _installed = previous

    # ----------------------------------------------------------- files

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _read(self, path: str) -> Optional[bytes]:
        """The file's bytes; None when there is none; b"" (a rejected blob)
        when it cannot be read or is not a regular file (a directory, a FIFO,
        a device). Opened without blocking (a FIFO's open would wait for a
        writer), then checked on the open descriptor, so the file checked is
        the file read."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_BINARY", 0))
        except (FileNotFoundError, NotADirectoryError):  # no file (or no directory)
            return None
        except OSError as e:  # a path too long for the system holds no file either
            return None if e.errno == errno.ENAMETOOLONG else b""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            with os.fdopen(fd, "rb") as f:
                fd = -1  # closed by f
                return f.read()
        except OSError:
            return b""
        finally:
            if fd >= 0:
                os.close(fd)

    def _write(self, path: str, data: bytes) -> None:
        """Writes `path` whole or not at all: a temporary file beside it,
        then an atomic rename over it (the last writer wins; a reader sees
        either file, never a mix)."""
        temp = None
        try:
            # Unique per process, thread and call; created like any file (the
            # umask decides who may read it), never over an existing one.
            name = f".tmp-{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex}.part"
            fd = os.open(os.path.join(self.directory, name),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            temp = os.path.join(self.directory, name)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temp, path)
            temp = None
        except OSError as e:
            with self._lock:
                self.store_errors += 1
                warn, self._warned = not self._warned, True
            if warn:
                warnings.warn(f"dnnl.cache.persistent: cannot write {path} ({e}); objects are "
                              "still built, but not stored", RuntimeWarning, stacklevel=3)
            return
        finally:
            if temp is not None:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
        self._count("stored")


# ------------------------------------------------------ installed for the process
#
# The compiled module calls the hook at every primitive creation
# (dnnl.<family>(pd), dnnl.primitive(pd), dnnl.reorder(src, dst), and so
# dnnl.ops), with the GIL; a creation the hook makes itself does not call it
# again. Without an installed cache nothing is called.

_installed: Optional[persistent] = None
_install_lock = threading.Lock()


def install(cache: Union[persistent, PathLike]) -> persistent:
    """Serves every primitive the process creates from now on from `cache` (a
    :class:`persistent`, or a directory to make one of): each
    ``dnnl.<family>(pd)`` (in any code, ``dnnl.ops`` included) is loaded from
    the blob stored for its descriptor, or compiled and its blob stored, as
    :meth:`persistent.primitive` does. Replaces a cache installed before.
    Returns the installed cache, also a context manager: the end of its
    ``with`` block installs the cache it replaced again (or none), so
    blocks nest.

    Served: primitives. Not served: engines (``cache.engine``), and graph
    partitions (``dnnl.graph.patterns`` included): oneDNN 3.13 has no cache
    blob for a compiled partition, and the primitives oneDNN's graph backend
    makes inside one never pass through the binding.
    """
    global _installed
    if not isinstance(cache, persistent):
        cache = persistent(cache)
    with _install_lock:
        _core._set_primitive_creation_hook(cache._serve)
        if _installed is not cache:
            cache._replaced = _installed
        _installed = cache
    return cache


def uninstall() -> Optional[persistent]:
    """Stops the installed cache (if any) serving the process; returns it."""
    global _installed
    with _install_lock:
        _core._set_primitive_creation_hook(None)
        cache, _installed = _installed, None
        if cache is not None:
            cache._replaced = None
    return cache


def installed() -> Optional[persistent]:
    """The cache installed for the process, or None."""
    return _installed


atexit.register(uninstall)  # the hook holds the cache: released before finalization
