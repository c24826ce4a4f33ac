"""Task-level pre- and post-processing (``--task``): a photo or a sound in, an answer out.

* :mod:`mobilegen.tasks.spec` — the spec and its flags (no torch/onnx/numpy); :mod:`mobilegen.tasks.dispatch` per kind (flags, model check);
* :mod:`mobilegen.tasks.reference` — the numpy/Pillow reference of the whole chain (the definition the
  Kotlin/Swift wrappers port, the gate's pre/post-processing);
* :mod:`mobilegen.tasks.graph` — the wrapper graph (standard ONNX operators only);
* :mod:`mobilegen.tasks.golden` — generated images/sounds and their expected answers for device tests;
* :mod:`mobilegen.tasks.stage` — the task's place in a build.
"""

from mobilegen.tasks.dispatch import resolve, task_from_flags
from mobilegen.tasks.spec import (
    TASK_KINDS,
    TaskFlags,
    TaskKind,
    TaskSpec,
    read_labels,
)

__all__ = ["TASK_KINDS", "TaskFlags", "TaskKind", "TaskSpec", "read_labels", "resolve", "task_from_flags"]
