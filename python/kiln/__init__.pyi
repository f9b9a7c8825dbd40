# Type stubs for the kiln package (kiln/__init__.py over the extension kiln._kiln).
import enum
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
version: str
version_info: Tuple[int, int, int]

class Error(Exception):
    code: Optional[str]

class InvalidArgumentError(Error, ValueError): ...
class NotFoundError(Error, LookupError): ...
class UnimplementedError(Error, NotImplementedError): ...
class OutOfRangeError(Error, IndexError): ...
class ResourceExhaustedError(Error, MemoryError): ...
class InternalError(Error): ...
class KilnIOError(Error, OSError): ...

class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2

LogCallback = Callable[[LogLevel, str], Any]
# Anything with the buffer protocol or __dlpack__, or a list / scalar numpy.asarray takes.
ArrayLike = Any
OptionValue = Union[str, int, float, bool, os.PathLike, Sequence[Union[str, int]]]

class TensorInfo:
    name: str
    dtype: Union[np.dtype, str, None]
    shape: Optional[Tuple[Optional[int], ...]]
    kind: str  # "tensor", "sequence", "optional" or "map"
    def __init__(self, name: str, dtype: Union[np.dtype, str, None],
                 shape: Optional[Tuple[Optional[int], ...]], kind: str = ...) -> None: ...
    @property
    def type(self) -> str: ...

class Device:
    name: str
    priority: int
    description: str
    available: bool
    reason: Optional[str]
    source: str
    def __getitem__(self, key: str) -> Any: ...

class Model:
    def __init__(self, path_or_bytes: Union[str, os.PathLike, bytes, bytearray, memoryview],
                 device: Optional[str] = ..., jit: Optional[str] = ..., threads: Optional[int] = ..., *,
                 format: Optional[str] = ..., log: Optional[LogCallback] = ..., **options: OptionValue) -> None: ...
    @property
    def inputs(self) -> List[TensorInfo]: ...
    @property
    def outputs(self) -> List[TensorInfo]: ...
    @property
    def format(self) -> str: ...
    def stats(self) -> Dict[str, Union[int, float, str]]: ...
    def run(self, feeds: Mapping[str, ArrayLike], outputs: Optional[Union[str, Sequence[str]]] = ..., *,
            threads: Optional[int] = ...) -> Dict[str, Any]: ...  # arrays; lists / None / dicts for ONNX non-tensors
    def run_ort(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, ArrayLike],
                run_options: Any = ...) -> List[Any]: ...
    def get_inputs(self) -> List[TensorInfo]: ...
    def get_outputs(self) -> List[TensorInfo]: ...

class HloFunction:
    model: Model
    @property
    def inputs(self) -> List[TensorInfo]: ...
    @property
    def outputs(self) -> List[TensorInfo]: ...
    def __call__(self, *args: ArrayLike) -> Union[npt.NDArray[Any], Tuple[npt.NDArray[Any], ...]]: ...

def compile_hlo(text: Union[str, bytes], device: Optional[str] = ..., **options: Any) -> HloFunction: ...
def devices() -> List[Device]: ...
def option_keys() -> Dict[str, str]: ...
