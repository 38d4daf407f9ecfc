"""Loads flash-compile's kernels (PTX or cubin + JSON manifest) through the
CUDA driver API and launches them on torch tensors. Needs only libcuda and
torch (for the tensors and the stream); no MLIR at run time.

    k = Kernel.load("kernels/attn_f16_d64.json")
    k(q=q, k=k_, v=v, o=o)          # [B, H, S, D] views, any strides
"""

import ctypes
import json
import math
import logging
import os
import re
import threading

from flash_mlir import validate

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CUDA_ERROR_NO_BINARY_FOR_GPU = 209

log = logging.getLogger("flash_mlir.runtime")

_lib = None


def _driver():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
        _check(_lib.cuInit(0), "cuInit")
    return _lib


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        if _lib is not None:
            _lib.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: CUDA error {rc} "
                           f"({name.value.decode() if name.value else '?'})")


_primary = {}


def _ensure_context(device):
    """Makes the device's primary context (the one torch uses) current."""
    lib = _driver()
    if device not in _primary:
        dev = ctypes.c_int()
        _check(lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
               "cuDevicePrimaryCtxRetain")
        _primary[device] = ctx
    current = ctypes.c_void_p()
    _check(lib.cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
    if current.value != _primary[device].value:
        _check(lib.cuCtxSetCurrent(_primary[device]), "cuCtxSetCurrent")


def tensor_info(name, t, fake=False):
    """A torch tensor described for flash_mlir.validate (fake tensors, as
    torch.compile traces them, have no data pointer)."""
    return validate.TensorInfo(
        name, tuple(t.shape), tuple(t.stride()),
        str(t.dtype).replace("torch.", ""), str(t.device),
        0 if fake else t.data_ptr())


class _TensorMaps:
    """Device copies of the CUtensorMaps of a kernel's `tensor_maps`
    parameter, encoded on the host (cuTensorMapEncodeTiled) and kept per
    (address, shape, strides) of the tensors they map: a training loop that
    reuses its buffers encodes and copies them once."""

    LIMIT = 4096

    def __init__(self):
        self._cache = {}
        self._lock = threading.Lock()

    @staticmethod
    def encode(request):
        lib = _driver()
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        rank = request["rank"]
        # CUtensorMap is 128 bytes, 64-byte aligned.
        raw = ctypes.create_string_buffer(128 + 64)
        address = (ctypes.addressof(raw) + 63) // 64 * 64
        _check(lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(address), ctypes.c_int(request["dtype"]), u32(rank),
            ctypes.c_void_p(request["address"]),
            (u64 * rank)(*request["dims"]), (u64 * max(1, rank - 1))(*request["strides"]),
            (u32 * rank)(*request["box"]), (u32 * rank)(*request["element_strides"]),
            ctypes.c_int(request["interleave"]), ctypes.c_int(request["swizzle"]),
            ctypes.c_int(request["l2_promotion"]), ctypes.c_int(request["oob_fill"])),
            "cuTensorMapEncodeTiled")
        return ctypes.string_at(address, 128)

    def buffer(self, param, tensors):
        """A device tensor holding the maps of `param` over `tensors`."""
        import torch
        infos = [tensor_info(m["tensor"], tensors[m["tensor"]]) for m in param["maps"]]
        key = tuple((i.data_ptr, i.shape, i.strides, i.dtype, str(m))
                    for i, m in zip(infos, param["maps"]))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        blob = b"".join(self.encode(validate.tensor_map_request(m, i))
                        for m, i in zip(param["maps"], infos))
        device = tensors[param["maps"][0]["tensor"]].device
        buf = torch.frombuffer(bytearray(blob), dtype=torch.uint8).to(device)
        with self._lock:
            if len(self._cache) >= self.LIMIT:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = buf
        return buf


_tensor_maps = _TensorMaps()

# cuLaunchKernelEx's configuration (cuda.h), for programmatic dependent
# launch: a launch whose manifest entry says `programmatic_dependent_launch`
# may start before the grid before it on the stream has finished; its
# kernel waits for that grid at its start (griddepcontrol.wait).
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _LaunchAttributeValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64),
                ("programmatic_stream_serialization_allowed", ctypes.c_int)]


class _LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", _LaunchAttributeValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_mem_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("num_attrs", ctypes.c_uint)]


def dependent_launch_config(block, shared):
    """A CUlaunchConfig with programmatic stream serialization (its
    attribute kept alive on it); the caller sets the grid and the stream of
    each launch."""
    attr = _LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    attr.value.programmatic_stream_serialization_allowed = 1
    config = _LaunchConfig(block=(ctypes.c_uint * 3)(*block),
                           shared_mem_bytes=shared, attrs=ctypes.pointer(attr),
                           num_attrs=1)
    config._attr = attr
    return config


def _workspace_dtype(entry):
    """The torch dtype of a manifest's workspace entry (f32 where it names
    none)."""
    import torch
    return getattr(torch, validate.MANIFEST_DTYPES[entry.get("dtype", "f32")])


def sm_count():
    """The current device's SM count."""
    lib = _driver()
    dev, sms = ctypes.c_int(), ctypes.c_int()
    _check(lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    _check(lib.cuDeviceGetAttribute(
        ctypes.byref(sms), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
        "cuDeviceGetAttribute")
    return sms.value


def device_capability():
    """The current device's compute capability, (major, minor)."""
    lib = _driver()
    dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _check(lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    for value, attribute in ((major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                             (minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)):
        _check(lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, dev),
               "cuDeviceGetAttribute")
    return major.value, minor.value


def cubin_runs_on(chip, capability):
    """Whether a cubin built for `chip` ("sm_80", "sm_90a") runs on a device
    of compute capability `capability` (major, minor): the same major and at
    least the cubin's minor, or exactly its own for an architecture-specific
    ("a") target. None for a chip name it does not know (the driver decides)."""
    m = re.fullmatch(r"sm_(\d+)(\d)(a?)", chip or "")
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    if m.group(3):
        return tuple(capability) == (major, minor)
    return capability[0] == major and capability[1] >= minor


class Launch:
    """One kernel function of a module image: parameters, grid, block and
    dynamic shared memory from its manifest entry."""

    def __init__(self, entry, directory, name, chip=None):
        lib = _driver()
        self.entry = entry
        self.name = name
        # The cubin where it runs on this GPU; otherwise the driver compiles
        # the PTX (an sm_80 cubin does not load on an H200, its PTX does).
        # A cubin known not to run is not offered to the driver at all, so
        # that no failed call shows up under compute-sanitizer; one the
        # driver refuses all the same falls back to the PTX too.
        self.module = ctypes.c_void_p()
        self.loaded = None
        for kind in ("cubin", "ptx"):
            image_name = entry.get(kind)
            if not image_name:
                continue
            if kind == "cubin" and entry.get("ptx") and \
                    cubin_runs_on(chip, device_capability()) is False:
                log.info("%s: %s is for %s, not this GPU; JIT-compiling %s",
                         name, image_name, chip, entry["ptx"])
                continue
            with open(os.path.join(directory, image_name), "rb") as f:
                image = f.read()
            if kind == "ptx":
                image += b"\0"
            self._image = ctypes.create_string_buffer(image, len(image))
            rc = lib.cuModuleLoadData(ctypes.byref(self.module), self._image)
            if rc == CUDA_ERROR_NO_BINARY_FOR_GPU and kind == "cubin" and entry.get("ptx"):
                log.info("%s: %s has no code for this GPU; JIT-compiling %s",
                         name, image_name, entry["ptx"])
                continue
            _check(rc, f"cuModuleLoadData({image_name})")
            self.loaded = kind if kind == "cubin" or not entry.get("cubin") \
                else "ptx (JIT: the cubin is for another GPU)"
            break
        if self.loaded is None:
            raise RuntimeError(f"{name}: the manifest names no cubin or PTX")
        self.function = ctypes.c_void_p()
        _check(lib.cuModuleGetFunction(ctypes.byref(self.function), self.module,
                                       entry["entry"].encode()),
               "cuModuleGetFunction")
        self.shared = int(entry["dynamic_shared_memory_bytes"])
        _check(lib.cuFuncSetAttribute(
            self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            ctypes.c_int(self.shared)), "cuFuncSetAttribute")
        # A persistent kernel gets as many CTAs as stay resident at once.
        self.max_ctas = self.resident_ctas() if entry.get("persistent") else 0
        self._arguments()

    def grid(self, tensors, scalars=None):
        def shape_of(name):
            return tensors[name].shape
        return [validate.grid_size(g, shape_of, scalars)
                for g in self.entry["grid"]]

    def resident_ctas(self):
        """How many CTAs of this launch the GPU holds at once."""
        lib = _driver()
        per_sm = ctypes.c_int()
        threads = 1
        for b in self.entry["block"]:
            threads *= b
        _check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(per_sm), self.function, ctypes.c_int(threads),
            ctypes.c_size_t(self.shared)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return per_sm.value * sm_count()

    def _arguments(self):
        """One int64 buffer holding every parameter word (memref
        descriptors: pointer, pointer, offset, sizes, strides) and the
        array of their addresses that cuLaunchKernel takes, built once."""
        words = sum(3 + 2 * p["rank"] for p in self.entry["params"])
        self._words = (ctypes.c_int64 * words)()
        base = ctypes.addressof(self._words)
        self._args = (ctypes.c_void_p * words)(*[base + 8 * i for i in range(words)])
        self._lock = threading.Lock()
        # A dependent launch's cuLaunchKernelEx configuration; a driver
        # without cuLaunchKernelEx (before CUDA 12) launches it plainly, its
        # griddepcontrol.wait then having nothing to wait for.
        self._dependent = None
        if self.entry.get("programmatic_dependent_launch") and \
                hasattr(_driver(), "cuLaunchKernelEx"):
            self._dependent = dependent_launch_config(self.entry["block"],
                                                      self.shared)

    def __call__(self, stream, tensors, scalars=None):
        values = []
        for p in self.entry["params"]:
            if p.get("kind") == "tensor_maps":
                t = _tensor_maps.buffer(p, tensors)
                values += (t.data_ptr(), t.data_ptr(), 0, t.numel(), 1)
                continue
            t = tensors[p["name"]]
            if t.dim() != p["rank"]:
                raise ValueError(f"{p['name']}: expected rank {p['rank']}, got {t.dim()}")
            ptr = t.data_ptr()
            values += (ptr, ptr, 0)
            values += t.shape
            values += t.stride()
        gx, gy, gz = validate.launch_grid(self.entry,
                                          self.grid(tensors, scalars),
                                          self.max_ctas)
        if min(gx, gy, gz) == 0:
            return
        bx, by, bz = self.entry["block"]
        # cuLaunchKernel copies the parameters before it returns; the lock
        # keeps another thread from refilling the buffer meanwhile.
        with self._lock:
            self._words[:] = values
            config = self._dependent
            if config is not None:
                config.grid[:] = (gx, gy, gz)
                config.stream = stream
                rc = _driver().cuLaunchKernelEx(ctypes.byref(config),
                                                self.function, self._args, None)
            else:
                rc = _driver().cuLaunchKernel(
                    self.function, gx, gy, gz, bx, by, bz, self.shared,
                    ctypes.c_void_p(stream), self._args, None)
        _check(rc, f"cuLaunchKernel({self.name})")


class Kernel:
    """A compiled attention (forward: one launch; backward: the launches of
    its manifest, in order, with the workspace it names)."""

    def __init__(self, manifest, directory, device=0, cache=None):
        import torch  # noqa: F401  (initialises the primary context)
        self.manifest = manifest
        self.name = manifest["kernel"]
        self.device = device
        torch.cuda.init()
        torch.cuda.current_stream(device)
        _ensure_context(device)
        entries = manifest.get("launches") or [manifest]
        self.launches = [Launch(e, directory, self.name, manifest.get("chip"))
                         for e in entries]
        # Kernels that load tiles with cp.async need contiguous, 16-byte
        # aligned rows; the manifest names the kernel for other strides.
        # `cache` (manifest path -> Kernel) shares the companions: a kernel
        # and its persistent form name the same general kernel.
        cache = {} if cache is None else cache
        self.general = None
        if manifest.get("general"):
            self.general = Kernel.load(os.path.join(directory, manifest["general"]),
                                       device, cache)
        # A split-KV kernel cuts the keys into runs over the GPU's SMs
        # (validate.choose_key_splits).
        self.sms = sm_count() if manifest.get("key_splits") else 0
        # Workspaces that stay zero between calls, by (name, stream).
        self._zeros = {}
        # A warp-specialised forward's persistent form, launched instead for
        # few keys (validate.takes_persistent_form).
        self.persistent_form = None
        if manifest.get("persistent_form"):
            self.persistent_form = Kernel.load(
                os.path.join(directory, manifest["persistent_form"]["kernel"]),
                device, cache)

    @property
    def loaded(self):
        """How the kernel was loaded: "cubin", or "ptx (JIT: ...)" when the
        cubin is for another GPU and the driver compiled the PTX."""
        return self.launches[0].loaded

    @property
    def backward(self):
        return self.manifest.get("kind") == "backward"

    @property
    def params(self):
        return validate.manifest_params(self.manifest)

    def rows_aligned(self, infos):
        """Whether every tensor's rows are contiguous and start on 16 bytes
        (the kernel's checks, on the host): the inputs it loads with cp.async
        or TMA and the outputs it stores two elements at a time (O, dQ); the
        LSE, stored and loaded element by element, needs a unit inner stride
        only."""
        workspace = {w["name"] for w in self.manifest.get("workspace", [])}
        return all(validate.inner_stride_unit(infos[p["name"]])
                   if p["name"] == "lse" else
                   validate.rows_aligned(infos[p["name"]])
                   for p in self.params if p["name"] not in workspace)

    def check(self, tensors):
        """Raises TypeError/ValueError naming the tensor if `tensors` do not
        fit this kernel (see validate.check_launch); launches nothing."""
        import torch
        for name, t in tensors.items():
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}: expected a torch.Tensor, got "
                                f"{type(t).__name__}")
        infos = {n: tensor_info(n, t) for n, t in tensors.items()}
        validate.check_launch(self.manifest, infos)
        if not infos["q"].device.endswith(f":{self.device}"):
            raise ValueError(f"q: on {infos['q'].device}, but {self.name} was "
                             f"loaded for cuda:{self.device}")
        return infos

    @staticmethod
    def load(manifest_path, device=0, cache=None):
        """The kernel of MANIFEST_PATH; with `cache` (a dict), each manifest
        is loaded once and the Kernel reused."""
        key = os.path.abspath(manifest_path)
        if cache is not None and key in cache:
            return cache[key]
        with open(manifest_path) as f:
            manifest = json.load(f)
        kernel = Kernel(manifest, os.path.dirname(manifest_path), device, cache)
        if cache is not None:
            cache[key] = kernel
        return kernel

    def grid(self, tensors):
        return self.launches[0].grid(tensors)

    def __call__(self, stream=None, **tensors):
        """Checks the tensors against the manifest, then launches. Returns
        the workspaces (see launch)."""
        return self.launch(tensors, stream, self.check(tensors))

    def _kept_zeros(self, entry, shape, stream):
        """A workspace that is zero before each launch and that the kernel
        leaves zero (a split-KV kernel's arrival counters): one buffer per
        stream, kept and grown. Launches on one stream run in order, so they
        share it; kernels on two streams get one each. A new buffer is zeroed
        on the current stream, which `stream` then waits for. While a CUDA
        graph is being captured, a call gets a buffer of its own, zeroed in
        the graph: a kept one could be freed or outgrown under a graph that
        still names it, a graph replayed on two streams would share it, and
        one made during the capture would hold its zeros only once the
        graph first runs (a memset per replay is the price)."""
        import torch
        count = math.prod(shape)
        dtype = _workspace_dtype(entry)
        if torch.cuda.is_current_stream_capturing():
            return torch.zeros(shape, dtype=dtype,
                               device=f"cuda:{self.device}")
        kept = self._zeros.get((entry["name"], stream))
        if kept is None or kept.numel() < count:
            current = torch.cuda.current_stream(self.device)
            kept = torch.zeros(max(count, 1024), device=f"cuda:{self.device}",
                               dtype=dtype)
            if stream != current.cuda_stream:
                other = torch.cuda.ExternalStream(stream, device=self.device)
                other.wait_stream(current)
                kept.record_stream(other)
            self._zeros[(entry["name"], stream)] = kept
        return kept[:count].view(shape)

    def splits(self, tensors):
        """The key splits a split-KV kernel takes for `tensors` (1 for
        other kernels)."""
        if not self.manifest.get("key_splits"):
            return 1
        b, h, m = tensors["q"].shape[:3]
        keys = tensors["k"].shape[2]
        if "block_table" in tensors:  # pages of `keys` rows
            keys *= tensors["block_table"].shape[1]
        return validate.choose_key_splits(self.manifest, b, h, m, keys,
                                          self.sms)

    def launch(self, tensors, stream=None, infos=None, splits=None,
               scalars=None):
        """Launches on tensors that fit the kernel (flash_mlir.torch has
        checked its own); takes the persistent form for few keys and the
        general kernel for unaligned rows. Returns the workspaces it
        allocated by name (the manifest's `workspace`), e.g. a backward's
        `d` = rowsum(dO O) in f32, shaped like the LSE. A split-KV kernel
        cuts the keys into `splits` runs (None: its own choice, see
        splits())."""
        import torch
        if self.persistent_form is not None and validate.takes_persistent_form(
                self.manifest, tensors["k"].shape[2]):
            return self.persistent_form.launch(tensors, stream, infos, splits,
                                               scalars)
        if self.manifest.get("requires_aligned_rows"):
            if infos is None:
                infos = {n: tensor_info(n, t) for n, t in tensors.items()}
            if not self.rows_aligned(infos) or \
                    not validate.tensor_maps_apply(self.manifest, infos):
                if self.general is None:
                    raise ValueError(f"{self.name}: needs contiguous 16-byte "
                                     "aligned rows and has no general kernel")
                return self.general.launch(tensors, stream, infos, splits,
                                           scalars)
        workspaces = {}
        if self.manifest.get("key_splits") and splits is None:
            splits = self.splits(tensors)
        current = torch.cuda.current_stream(self.device)
        if stream is None:
            stream = current.cuda_stream
        for w in self.manifest.get("workspace", []):
            shape = validate.workspace_shape(
                w, {w["like"]: tensors[w["like"]].shape}, splits or 1)
            if w.get("zero_between_calls"):
                tensors[w["name"]] = self._kept_zeros(w, shape, stream)
                continue
            tensors[w["name"]] = torch.empty(shape, dtype=_workspace_dtype(w),
                                             device=tensors["q"].device)
            workspaces[w["name"]] = tensors[w["name"]]
        for launch in self.launches:
            launch(stream, tensors, scalars)
        # Allocated on the current stream: kept from reuse until the
        # kernels on another stream are done with them.
        if workspaces and stream != current.cuda_stream:
            other = torch.cuda.ExternalStream(stream, device=self.device)
            for t in workspaces.values():
                t.record_stream(other)
        return workspaces


def load_all(directory, device=0, general=True):
    """Every kernel of DIR; general=False leaves out the ones that another
    kernel names as its general (unaligned-rows) kernel or its persistent
    form."""
    cache = {}
    # index.json (flash_mlir.kernels' record of the variants) is no kernel.
    kernels = [Kernel.load(os.path.join(directory, name), device, cache)
               for name in sorted(os.listdir(directory))
               if name.endswith(".json") and name != "index.json"]
    if not general:
        named = validate.companion_manifests([k.manifest for k in kernels])
        kernels = [k for k in kernels if f"{k.name}.json" not in named]
    return kernels
