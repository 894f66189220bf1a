"""`vknn-opt`: run VKNN pass pipelines on textual IR or an ONNX file.

Built on xDSL's `xDSLOptMain` (its pipeline syntax `-p a,b{opt=v}`,
`--split-input-file`, `--verify-diagnostics`), restricted to VKNN's dialects
and passes, with `.onnx` files as a frontend and user errors printed as one
line instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from vknn.dialects import make_context
from vknn.errors import VknnError
from vknn.transforms.registry import available_passes


class VknnOptMain(xDSLOptMain):
    version_format = "vknn-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="VKNN pass driver", args=args)
        if self.args.verify_diagnostics:  # parse errors are diagnostics too
            self.args.parsing_diagnostics = True

    def register_all_dialects(self) -> None:
        self.ctx = make_context()

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends = {
            "mlir": self.available_frontends["mlir"],
            "onnx": self._parse_onnx_stream,
        }

    def register_all_passes(self) -> None:
        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR after every pass (to stderr, like mlir-opt)",
        )
        arg_parser.add_argument(
            "--list-passes", action="store_true", help="list the available passes and exit"
        )
        arg_parser.add_argument(
            "--pipeline",
            type=str,
            default="",
            help="run a named pipeline (see vknn.transforms.pipelines) before -p passes",
        )
        arg_parser.add_argument(
            "--vkd-target",
            type=str,
            default="",
            help="the target of --pipeline vkd/full (generic, lavapipe, nvidia, from-device, "
            "a .json); default: the module's #vkd.target",
        )
        arg_parser.add_argument(
            "--stats",
            action="store_true",
            help="print the op count before and after the pipeline (to stderr)",
        )

    def setup_pipeline(self) -> None:
        spec = self.args.passes
        if self.args.pipeline:
            from vknn.transforms.pipelines import pipeline_spec

            try:
                named = pipeline_spec(self.args.pipeline, target=self.args.vkd_target)
            except KeyError as e:
                raise SystemExit(f"vknn-opt: error: {e.args[0]}") from None
            spec = f"{named},{spec}" if spec else named
        after_all = self.args.print_ir_after_all or self.args.print_between_passes
        started = time.perf_counter()

        def callback(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            nonlocal started
            if prev is not None and self.args.time_passes:
                print(
                    f"Pass {prev.name} took {time.perf_counter() - started:.4f} s", file=sys.stderr
                )
            if not self.args.disable_verify:
                module.verify()
            if prev is not None and after_all:
                print(f"// -----// IR Dump After {prev.name} //----- //", file=sys.stderr)
                Printer(stream=sys.stderr).print_op(module)
                print(file=sys.stderr)
            started = time.perf_counter()

        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, spec, callback)
        except Exception as e:  # unknown pass / bad option: one line, not a traceback
            raise SystemExit(f"vknn-opt: error: {e}") from None

    def _parse_onnx_stream(self, stream: IO[bytes]) -> ModuleOp:
        from vknn.frontend import import_onnx_bytes, import_onnx_file

        if self.args.input_file:
            return import_onnx_file(self.args.input_file)
        return import_onnx_bytes(stream.read(), "<stdin>")

    def apply_passes(self, prog: ModuleOp) -> None:
        if self.args.stats:
            before = _op_counts(prog)
        try:
            super().apply_passes(prog)
        except VknnError as e:
            if self.args.verify_diagnostics:  # report per input chunk, like verifier errors
                raise DiagnosticException(_one_line(e)) from e
            raise
        if self.args.stats:
            _print_stats(before, _op_counts(prog))

    def run(self) -> None:
        if self.args.list_passes:
            for name, factory in sorted(self.available_passes.items()):
                doc = (factory().__doc__ or "").strip().splitlines()
                print(f"{name:28s} {doc[0] if doc else ''}")
            return
        try:
            super().run()
        except ParseError as e:
            print(f"vknn-opt: error: {e}", file=sys.stderr)
            raise SystemExit(1) from None
        except (VknnError, VerifyException, DiagnosticException) as e:
            if self.args.verify_diagnostics:
                print(e)
                return
            print(f"vknn-opt: error: {_one_line(e)}", file=sys.stderr)
            raise SystemExit(1) from None
        except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
            print(f"vknn-opt: error: {e.strerror}: {e.filename}", file=sys.stderr)
            raise SystemExit(1) from None
        except ValueError as e:
            if "Unrecognized file extension" in str(e):
                print(f"vknn-opt: error: {e} (expected .mlir or .onnx)", file=sys.stderr)
                raise SystemExit(1) from None
            raise


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def _op_counts(module: ModuleOp) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in module.walk():
        if op.name in ("builtin.module", "func.func", "func.return"):
            continue
        counts[op.name] = counts.get(op.name, 0) + 1
    return counts


def _print_stats(before: dict[str, int], after: dict[str, int]) -> None:
    print(
        f"// stats: {sum(before.values())} ops before, {sum(after.values())} ops after",
        file=sys.stderr,
    )
    for name in sorted(set(before) | set(after)):
        print(
            f"//   {name:32s} {before.get(name, 0):6d} -> {after.get(name, 0):6d}", file=sys.stderr
        )


def main(argv: Sequence[str] | None = None) -> None:
    try:
        VknnOptMain(args=argv).run()
    except BaseException as e:  # noqa: BLE001  (one line, never a traceback)
        from vknn.tools.cli import top_level_error

        if isinstance(e, VknnError):
            print(f"vknn-opt: error: {_one_line(e)}", file=sys.stderr)
            raise SystemExit(1) from None
        raise SystemExit(top_level_error("vknn-opt", e)) from None


if __name__ == "__main__":
    main()
