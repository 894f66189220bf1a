"""lit configuration: FileCheck tests of the dialects, the importer and the passes."""

import os
import shutil
import sys

import lit.formats

config.name = "VKNN"  # noqa: F821 (lit injects `config`)
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs", "Output"]

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
# No model caches next to the test models.
config.environment["VKNN_MODEL_CACHE"] = "0"
for var in ("HOME", "TMPDIR", "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VKNN_DEVICE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

filecheck = shutil.which("filecheck", path=config.environment["PATH"])
config.substitutions.append(("FileCheck", filecheck or "filecheck"))
config.substitutions.append(("%python", sys.executable))

import onnx  # noqa: E402

light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
config.substitutions.append(("%light", light))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
