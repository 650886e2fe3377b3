"""The emulator's host JIT: an LLVM-dialect module compiled for the host through LLVM's C API.

MLIR's ``ExecutionEngine`` (which the emulator used before) fixes the part that matters for a large kernel:
its code generator always runs at LLVM's default level (its ``opt_level`` only picks the IR pipeline, and
``default<O0>`` then leaves a body that the greedy register allocator still has to work through). After
``default<O2>`` inlines the emulator's helpers the kernel is one function of tens of thousands of
instructions; the greedy register allocator, the machine scheduler and, in the assertion-enabled wheels,
their live-range verification took 5-30 s on the large sm_80 / sm_100a tests, as long as running them.
Here each step is ours, through the C API of the ``libLLVM.so`` the MLIR bindings already load:

1. translate (``mlirTranslateModuleToLLVMIR``) into a fresh ``LLVMContext``;
2. optimise with the new pass manager (``LLVMRunPasses``) at the level's pipeline (:data:`LEVELS`);
3. add a packed wrapper ``void __emu_packed_<f>(void **args)`` per entry point (each argument read through
   its pointer, as the ExecutionEngine's ``_mlir_<f>`` wrappers do, so no C calling convention of ``half``
   or ``i1`` is guessed from Python);
4. generate an object file (``LLVMTargetMachineEmitToMemoryBuffer``) at the level's code generation level;
5. link it into an ORC ``LLJIT`` whose main library also defines the runtime's callbacks (absolute symbols);
   the rest (libm) resolves against the process.

No level changes a result: no pass or code generator here may reassociate or contract floating-point
arithmetic, and every function keeps the baseline CPU the rewrite pinned (:mod:`.hostmodule`).
:class:`HostJit` records the seconds of each step in ``timings``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import time
import weakref

from ..errors import TilecoreError

# platform.machine() -> (LLVM target name used in LLVMInitialize<T>*, baseline CPU)
_TARGETS = {"x86_64": ("X86", "x86-64"), "AMD64": ("X86", "x86-64"),
            "aarch64": ("AArch64", "generic"), "arm64": ("AArch64", "generic")}

# opt level -> (IR pipeline, LLVMCodeGenOptLevel: 0 None, 1 Less, 2 Default, 3 Aggressive). Level 1, the default:
# scalar replacement of aggregates, early CSE and CFG simplification (cheap, linear-ish in the body), then the fast
# instruction selector and register allocator. On the slowest emulator tests (bench/emulate.py --tests) it cut the
# JIT from 5-31 s to 0.1-1 s and the runs stayed as fast: their time goes to the runtime's callbacks (barriers,
# warp collectives, tensor-core helpers), not to the kernel's own code. The sequential path's native loop runs
# about half as fast as at level 2 (vector add: ~20M instead of ~40M threads/s), which matters for no test.
# Level 2 is what MLIR's ExecutionEngine did (default<O2>, default code generation); 0 skips the IR passes.
LEVELS = {0: ("default<O0>", 0), 1: ("function(sroa,early-cse,simplifycfg)", 0), 2: ("default<O2>", 2),
          3: ("default<O3>", 3)}
_RELOC_PIC = 2                  # LLVMRelocMode
_CODE_MODEL_JIT_DEFAULT = 1     # LLVMCodeModel
_OBJECT_FILE = 1                # LLVMCodeGenFileType
_EXPORTED_CALLABLE = 1 | 4      # LLVMJITSymbolGenericFlags: Exported | Callable

_P = ctypes.c_void_p


class _Handle(ctypes.Structure):
    """An MLIR C API handle (``MlirModule``, ``MlirOperation``, ``MlirContext``): one pointer, passed by value."""

    _fields_ = [("ptr", _P)]


class _Flags(ctypes.Structure):
    _fields_ = [("generic", ctypes.c_uint8), ("target", ctypes.c_uint8)]


class _EvaluatedSymbol(ctypes.Structure):
    _fields_ = [("address", ctypes.c_uint64), ("flags", _Flags)]


class _SymbolMapPair(ctypes.Structure):
    _fields_ = [("name", _P), ("sym", _EvaluatedSymbol)]


# name -> (restype, argtypes) of every C function used
_SIGNATURES = {
    "mlirRegisterAllLLVMTranslations": (None, [_Handle]),
    "mlirModuleGetOperation": (_Handle, [_Handle]),
    "mlirTranslateModuleToLLVMIR": (_P, [_Handle, _P]),
    "LLVMContextCreate": (_P, []),
    "LLVMContextDispose": (None, [_P]),
    "LLVMDisposeModule": (None, [_P]),
    "LLVMGetDefaultTargetTriple": (_P, []),
    "LLVMDisposeMessage": (None, [_P]),
    "LLVMGetTargetFromTriple": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), ctypes.POINTER(_P)]),
    "LLVMCreateTargetMachine": (_P, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                     ctypes.c_int, ctypes.c_int]),
    "LLVMDisposeTargetMachine": (None, [_P]),
    "LLVMCreateTargetDataLayout": (_P, [_P]),
    "LLVMDisposeTargetData": (None, [_P]),
    "LLVMSetModuleDataLayout": (None, [_P, _P]),
    "LLVMSetTarget": (None, [_P, ctypes.c_char_p]),
    "LLVMCreatePassBuilderOptions": (_P, []),
    "LLVMDisposePassBuilderOptions": (None, [_P]),
    "LLVMPassBuilderOptionsSetLoopVectorization": (None, [_P, ctypes.c_int]),
    "LLVMPassBuilderOptionsSetSLPVectorization": (None, [_P, ctypes.c_int]),
    "LLVMPassBuilderOptionsSetLoopUnrolling": (None, [_P, ctypes.c_int]),
    "LLVMPassBuilderOptionsSetLoopInterleaving": (None, [_P, ctypes.c_int]),
    "LLVMRunPasses": (_P, [_P, ctypes.c_char_p, _P, _P]),
    "LLVMGetErrorMessage": (_P, [_P]),
    "LLVMDisposeErrorMessage": (None, [_P]),
    "LLVMTargetMachineEmitToMemoryBuffer": (ctypes.c_int, [_P, _P, ctypes.c_int, ctypes.POINTER(_P),
                                                           ctypes.POINTER(_P)]),
    "LLVMGetBufferStart": (_P, [_P]),
    "LLVMGetBufferSize": (ctypes.c_size_t, [_P]),
    "LLVMDisposeMemoryBuffer": (None, [_P]),
    "LLVMGetModuleContext": (_P, [_P]),
    "LLVMGetNamedFunction": (_P, [_P, ctypes.c_char_p]),
    "LLVMGlobalGetValueType": (_P, [_P]),
    "LLVMCountParamTypes": (ctypes.c_uint, [_P]),
    "LLVMGetParamTypes": (None, [_P, ctypes.POINTER(_P)]),
    "LLVMGetReturnType": (_P, [_P]),
    "LLVMPointerTypeInContext": (_P, [_P, ctypes.c_uint]),
    "LLVMVoidTypeInContext": (_P, [_P]),
    "LLVMInt64TypeInContext": (_P, [_P]),
    "LLVMFunctionType": (_P, [_P, ctypes.POINTER(_P), ctypes.c_uint, ctypes.c_int]),
    "LLVMAddFunction": (_P, [_P, ctypes.c_char_p, _P]),
    "LLVMGetParam": (_P, [_P, ctypes.c_uint]),
    "LLVMAppendBasicBlockInContext": (_P, [_P, _P, ctypes.c_char_p]),
    "LLVMCreateBuilderInContext": (_P, [_P]),
    "LLVMPositionBuilderAtEnd": (None, [_P, _P]),
    "LLVMDisposeBuilder": (None, [_P]),
    "LLVMConstInt": (_P, [_P, ctypes.c_ulonglong, ctypes.c_int]),
    "LLVMBuildGEP2": (_P, [_P, _P, _P, ctypes.POINTER(_P), ctypes.c_uint, ctypes.c_char_p]),
    "LLVMBuildLoad2": (_P, [_P, _P, _P, ctypes.c_char_p]),
    "LLVMBuildCall2": (_P, [_P, _P, _P, ctypes.POINTER(_P), ctypes.c_uint, ctypes.c_char_p]),
    "LLVMBuildRetVoid": (_P, [_P]),
    "LLVMCreateMemoryBufferWithMemoryRangeCopy": (_P, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]),
    "LLVMOrcCreateLLJITBuilder": (_P, []),
    "LLVMOrcCreateLLJIT": (_P, [ctypes.POINTER(_P), _P]),
    "LLVMOrcDisposeLLJIT": (_P, [_P]),
    "LLVMOrcLLJITGetMainJITDylib": (_P, [_P]),
    "LLVMOrcLLJITMangleAndIntern": (_P, [_P, ctypes.c_char_p]),
    "LLVMOrcAbsoluteSymbols": (_P, [ctypes.POINTER(_SymbolMapPair), ctypes.c_size_t]),
    "LLVMOrcJITDylibDefine": (_P, [_P, _P]),
    "LLVMOrcLLJITAddObjectFile": (_P, [_P, _P, _P]),
    "LLVMOrcLLJITLookup": (_P, [_P, ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p]),
}

_LIB = None
_LIB_LOCK = threading.Lock()


def _library():
    """The MLIR C API library of the bindings (``libMLIRPythonCAPI.so``; LLVM's C API resolves through its
    ``libLLVM.so``), with the signatures declared and the host target initialised (once)."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            from ..mlir import ir

            libs = os.path.join(os.path.dirname(os.path.abspath(ir.__file__)), "_mlir_libs")
            lib = ctypes.CDLL(os.path.join(libs, "libMLIRPythonCAPI.so"))
            for name, (res, args) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            target = _TARGETS.get(platform.machine())
            if target is None:
                raise TilecoreError(f"the emulator's JIT does not know the host architecture {platform.machine()!r}")
            for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
                getattr(lib, f"LLVMInitialize{target[0]}{part}")()
            _LIB = lib
        return _LIB


def _capsule_pointer(obj, kind: str) -> _Handle:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = _P, [ctypes.py_object, ctypes.c_char_p]
    return _Handle(get(obj._CAPIPtr, f"mlir.ir.{kind}._CAPIPtr".encode()))


def _check(lib, err, what: str) -> None:
    """Raise a :class:`TilecoreError` for a non-null ``LLVMErrorRef`` (consumed)."""
    if err:
        msg = lib.LLVMGetErrorMessage(err)
        text = ctypes.string_at(msg).decode(errors="replace")
        lib.LLVMDisposeErrorMessage(msg)
        raise TilecoreError(f"{what}: {text}")


class HostJit:
    """``module`` (an LLVM-dialect ``ir.Module``, left unchanged) compiled for the host and linked.

    ``symbols``: name -> address of functions the module calls (the runtime's ctypes callbacks); ``entries``:
    the functions :meth:`lookup` returns packed wrappers of; ``opt_level``: 0 to 3, a row of :data:`LEVELS`
    (IR pipeline and code generation level). ``timings``: seconds of ``translate``, ``optimise``, ``codegen``
    and ``link``. The machine code lives until the object is garbage collected."""

    def __init__(self, module, symbols: dict, entries, opt_level: int = 1):
        if opt_level not in LEVELS:
            raise TilecoreError(f"the emulator's JIT level must be one of {sorted(LEVELS)}, got {opt_level!r}")
        pipeline, codegen_level = LEVELS[opt_level]
        lib = self._lib = _library()
        self.timings: dict[str, float] = {}
        obj = self._compile(lib, module, list(entries), pipeline, codegen_level)
        t1 = time.perf_counter()
        jit = _P()
        _check(lib, lib.LLVMOrcCreateLLJIT(ctypes.byref(jit), lib.LLVMOrcCreateLLJITBuilder()),
               "LLJIT cannot start")
        self._jit = jit.value
        self._finalizer = weakref.finalize(self, lib.LLVMOrcDisposeLLJIT, self._jit)
        self._finalizer.atexit = False  # at exit a daemon host thread may still be inside the code
        dylib = lib.LLVMOrcLLJITGetMainJITDylib(self._jit)
        if symbols:
            pairs = (_SymbolMapPair * len(symbols))()
            for pair, (name, addr) in zip(pairs, symbols.items()):
                pair.name = lib.LLVMOrcLLJITMangleAndIntern(self._jit, name.encode())
                pair.sym = _EvaluatedSymbol(int(addr), _Flags(_EXPORTED_CALLABLE, 0))
            _check(lib, lib.LLVMOrcJITDylibDefine(dylib, lib.LLVMOrcAbsoluteSymbols(pairs, len(symbols))),
                   "the runtime's symbols cannot be defined")
        buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len(obj), b"emulated-kernel")
        _check(lib, lib.LLVMOrcLLJITAddObjectFile(self._jit, dylib, buf), "the object file cannot be loaded")
        self._entries: dict[str, int] = {}
        for name in entries:  # linking happens at the first lookup
            addr = ctypes.c_uint64()
            _check(lib, lib.LLVMOrcLLJITLookup(self._jit, ctypes.byref(addr), f"__emu_packed_{name}".encode()),
                   f"'{name}' cannot be linked")
            self._entries[name] = addr.value
        self.timings["link"] = time.perf_counter() - t1
        self.object_size = len(obj)

    def lookup(self, name: str) -> int:
        """Address of the packed wrapper ``void (void **args)`` of entry point ``name`` (each ``args[i]`` points
        at argument i)."""
        return self._entries[name]

    def _compile(self, lib, module, entries: list, pipeline: str, codegen_level: int) -> bytes:
        """The object file of ``module``; fills ``timings`` (translate / optimise / codegen)."""
        t0 = time.perf_counter()
        triple_msg = lib.LLVMGetDefaultTargetTriple()
        triple = ctypes.string_at(triple_msg)
        lib.LLVMDisposeMessage(triple_msg)
        target, err = _P(), _P()
        if lib.LLVMGetTargetFromTriple(triple, ctypes.byref(target), ctypes.byref(err)):
            msg = ctypes.string_at(err.value).decode(errors="replace")
            lib.LLVMDisposeMessage(err)
            raise TilecoreError(f"no LLVM target for {triple.decode()}: {msg}")
        cpu = _TARGETS[platform.machine()][1].encode()
        tm = lib.LLVMCreateTargetMachine(target, triple, cpu, b"", codegen_level, _RELOC_PIC, _CODE_MODEL_JIT_DEFAULT)
        llctx = lib.LLVMContextCreate()
        try:
            mod = self._translate(lib, module, llctx)
            try:
                layout = lib.LLVMCreateTargetDataLayout(tm)
                lib.LLVMSetModuleDataLayout(mod, layout)
                lib.LLVMDisposeTargetData(layout)
                lib.LLVMSetTarget(mod, triple)
                t1 = time.perf_counter()
                self.timings["translate"] = t1 - t0
                opts = lib.LLVMCreatePassBuilderOptions()
                for setter in ("LoopVectorization", "SLPVectorization", "LoopUnrolling", "LoopInterleaving"):
                    getattr(lib, f"LLVMPassBuilderOptionsSet{setter}")(opts, 1)
                try:
                    _check(lib, lib.LLVMRunPasses(mod, pipeline.encode(), tm, opts),
                           f"the IR pipeline {pipeline!r} failed")
                finally:
                    lib.LLVMDisposePassBuilderOptions(opts)
                for name in entries:
                    _packed_wrapper(lib, mod, llctx, name)
                t2 = time.perf_counter()
                self.timings["optimise"] = t2 - t1
                buf, err = _P(), _P()
                if lib.LLVMTargetMachineEmitToMemoryBuffer(tm, mod, _OBJECT_FILE, ctypes.byref(err), ctypes.byref(buf)):
                    msg = ctypes.string_at(err.value).decode(errors="replace")
                    lib.LLVMDisposeMessage(err)
                    raise TilecoreError(f"code generation failed: {msg}")
                obj = ctypes.string_at(lib.LLVMGetBufferStart(buf), lib.LLVMGetBufferSize(buf))
                lib.LLVMDisposeMemoryBuffer(buf)
                self.timings["codegen"] = time.perf_counter() - t2
                return obj
            finally:
                lib.LLVMDisposeModule(mod)
        finally:
            lib.LLVMContextDispose(llctx)
            lib.LLVMDisposeTargetMachine(tm)

    @staticmethod
    def _translate(lib, module, llctx):
        """``module`` as an LLVM module in ``llctx`` (MLIR's diagnostics, if it fails, in the error)."""
        lib.mlirRegisterAllLLVMTranslations(_capsule_pointer(module.context, "Context"))
        notes = []

        def collect(d):
            notes.append(f"{d.location}: {d.message}")
            return True

        handler = module.context.attach_diagnostic_handler(collect)
        try:
            mod = lib.mlirTranslateModuleToLLVMIR(lib.mlirModuleGetOperation(_capsule_pointer(module, "Module")), llctx)
        finally:
            handler.detach()
        if not mod:
            raise TilecoreError("the translation to LLVM IR failed: " + ("; ".join(notes) or "no diagnostic"))
        return mod


def _packed_wrapper(lib, mod, llctx, name: str) -> None:
    """Define ``void __emu_packed_<name>(ptr %args)`` calling ``name(*args[0], *args[1], ...)``."""
    fn = lib.LLVMGetNamedFunction(mod, name.encode())
    if not fn:
        raise TilecoreError(f"internal error: the emulator's host module has no function '{name}'")
    fty = lib.LLVMGlobalGetValueType(fn)
    n = lib.LLVMCountParamTypes(fty)
    params = (_P * max(n, 1))()
    lib.LLVMGetParamTypes(fty, params)
    ptr = lib.LLVMPointerTypeInContext(llctx, 0)
    i64 = lib.LLVMInt64TypeInContext(llctx)
    wty = lib.LLVMFunctionType(lib.LLVMVoidTypeInContext(llctx), (_P * 1)(ptr), 1, 0)
    wrapper = lib.LLVMAddFunction(mod, f"__emu_packed_{name}".encode(), wty)
    b = lib.LLVMCreateBuilderInContext(llctx)
    try:
        lib.LLVMPositionBuilderAtEnd(b, lib.LLVMAppendBasicBlockInContext(llctx, wrapper, b"entry"))
        argv = lib.LLVMGetParam(wrapper, 0)
        values = (_P * max(n, 1))()
        for i in range(n):
            slot = lib.LLVMBuildGEP2(b, ptr, argv, (_P * 1)(lib.LLVMConstInt(i64, i, 0)), 1, b"")
            values[i] = lib.LLVMBuildLoad2(b, params[i], lib.LLVMBuildLoad2(b, ptr, slot, b""), b"")
        lib.LLVMBuildCall2(b, fty, fn, values, n, b"")
        lib.LLVMBuildRetVoid(b)
    finally:
        lib.LLVMDisposeBuilder(b)
