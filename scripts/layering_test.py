#!/usr/bin/env python3
"""Tests of scripts/layering: each rule on a small workspace in a temporary folder, once
where it holds and once where it fires. Run as `python3 scripts/layering_test.py`."""

import tempfile
import textwrap
import unittest
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

SCRIPT = Path(__file__).with_name("layering")
_loader = SourceFileLoader("layering", str(SCRIPT))
layering = module_from_spec(spec_from_loader("layering", _loader))
_loader.exec_module(layering)


def crate_manifest(name, deps=(), dev_deps=()):
    lines = [f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2024"\n', "[dependencies]"]
    lines += [f'{d} = {{ path = "../{d}" }}' for d in deps]
    lines += ["[dev-dependencies]"] + [f'{d} = {{ path = "../{d}" }}' for d in dev_deps]
    return "\n".join(lines) + "\n"


def rules(order, forbidden=(), layers=None, limit=10, allowed=None):
    return {
        "crates": {"order": list(order), "forbidden": [list(f) for f in forbidden]},
        "layers": layers or {},
        "long_files": {"limit": limit, "allowed": allowed or {}},
    }


class Workspace:
    """A cargo workspace written from {path: text}; the crates are its top folders."""

    def __init__(self, files):
        self._dir = tempfile.TemporaryDirectory()
        self.root = Path(self._dir.name)
        crates = sorted({Path(p).parts[0] for p in files if p.endswith("Cargo.toml") and "/" in p})
        members = ", ".join(f'"{c}"' for c in crates)
        files = {"Cargo.toml": f'[workspace]\nresolver = "2"\nmembers = [{members}]\n', **files}
        for path, text in files.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(textwrap.dedent(text))

    def check(self, rules):
        return layering.check(self.root, rules)

    def close(self):
        self._dir.cleanup()


def one_crate(files, name="app"):
    """A workspace of one library crate, `name`, with these files under its src/."""
    return Workspace({f"{name}/Cargo.toml": crate_manifest(name), **{f"{name}/src/{p}": t for p, t in files.items()}})


class CrateOrder(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace(
            {
                "low/Cargo.toml": crate_manifest("low"),
                "low/src/lib.rs": "",
                "high/Cargo.toml": crate_manifest("high", deps=["low"]),
                "high/src/lib.rs": "",
                "top/Cargo.toml": crate_manifest("top", deps=["high"], dev_deps=["low"]),
                "top/src/lib.rs": "",
            }
        )
        self.addCleanup(self.ws.close)

    def test_arrows_down_the_order_hold(self):
        self.assertEqual(self.ws.check(rules(["low", "high", "top"])), ([], []))

    def test_an_arrow_back_up_fires(self):
        problems, _ = self.ws.check(rules(["high", "low", "top"]))
        self.assertEqual(problems, ["crate high depends on low (normal), which comes after it in the crate order"])

    def test_a_dev_dependency_back_up_fires(self):
        problems, _ = self.ws.check(rules(["high", "top", "low"]))
        self.assertIn("crate top depends on low (dev), which comes after it in the crate order", problems)

    def test_a_forbidden_pair_fires_though_the_order_allows_it(self):
        problems, _ = self.ws.check(rules(["low", "high", "top"], forbidden=[("top", "high", "top is a leaf")]))
        self.assertEqual(problems, ["crate top depends on high (normal): top is a leaf"])

    def test_a_crate_missing_from_the_order_fires(self):
        problems, _ = self.ws.check(rules(["low", "high"]))
        self.assertIn("crate top: not in the crate order of layering.toml", problems)


LAYERED = {
    "lib.rs": """
        pub mod low;
        pub mod high;
        pub use high::Top;
    """,
    "low.rs": "pub struct Bottom;\n",
    "high.rs": """
        use crate::low::Bottom;
        pub struct Top(pub Bottom);
    """,
}
LAYERS = {"app": [["low"], ["high"]]}


class Layers(unittest.TestCase):
    def check(self, files):
        ws = one_crate(files)
        self.addCleanup(ws.close)
        return ws.check(rules(["app"], layers=LAYERS, limit=1000))

    def test_imports_down_the_layers_hold(self):
        self.assertEqual(self.check(LAYERED), ([], []))

    def assert_low_imports_high(self, low_rs, line):
        problems, _ = self.check(dict(LAYERED, **{"low.rs": low_rs}))
        self.assertIn(f"app/src/low.rs:{line}: low (layer 1) imports high (layer 2), a higher layer", problems)

    def test_an_import_up_fires_at_its_line(self):
        self.assert_low_imports_high("pub struct Bottom;\nuse crate::high::Top;\n", 2)

    def test_an_import_through_the_roots_reexport_fires(self):
        self.assert_low_imports_high("pub struct Bottom;\nfn f(_: crate::Top) {}\n", 2)

    def test_a_path_in_a_serde_attribute_fires(self):
        self.assert_low_imports_high('#[serde(with = "crate::high::top")]\npub struct Bottom;\n', 1)

    def test_a_path_in_a_comment_or_message_is_no_import(self):
        files = dict(LAYERED, **{"low.rs": '// crate::high::Top\npub const M: &str = "see crate::high";\n'})
        self.assertEqual(self.check(files), ([], []))

    def test_the_test_module_may_import_anything(self):
        files = dict(LAYERED, **{"low.rs": "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::high::Top;\n}\n"})
        self.assertEqual(self.check(files), ([], []))

    def test_a_module_without_a_layer_fires(self):
        files = dict(LAYERED, **{"lib.rs": LAYERED["lib.rs"] + "pub mod stray;\n", "stray.rs": ""})
        problems, _ = self.check(files)
        self.assertEqual(problems, ["app/src/stray.rs: module stray has no layer in layering.toml [layers.app]"])


class Circles(unittest.TestCase):
    def check(self, files):
        ws = one_crate(files)
        self.addCleanup(ws.close)
        return ws.check(rules(["app"], limit=1000))

    def test_a_circle_inside_one_folder_holds(self):
        files = {
            "lib.rs": "mod a;\n",
            "a.rs": "mod b;\nuse b::B;\npub struct A;\n",
            "a/b.rs": "use super::A;\npub struct B;\n",
        }
        self.assertEqual(self.check(files), ([], []))

    def test_a_circle_across_folders_fires_with_its_imports(self):
        files = {
            "lib.rs": "mod a;\nmod c;\n",
            "a.rs": "mod b;\npub struct A;\n",
            "a/b.rs": "use crate::c::C;\npub struct B;\n",
            "c.rs": "use crate::a::b::B;\npub struct C;\n",
        }
        problems, _ = self.check(files)
        self.assertEqual(
            problems,
            [
                "circle of 2 files across folders: app/src/a/b.rs, app/src/c.rs; its imports between "
                "folders: app/src/a/b.rs:1 -> app/src/c.rs; app/src/c.rs:1 -> app/src/a/b.rs"
            ],
        )


class LongFiles(unittest.TestCase):
    def check(self, files, docs="", allowed=None):
        ws = one_crate(files)
        (ws.root / "ARCHITECTURE.md").write_text(docs)
        self.addCleanup(ws.close)
        return ws.check(rules(["app"], limit=10, allowed=allowed))

    TEN = "fn f() {}\n" * 10
    ELEVEN = "fn f() {}\n" * 11
    TESTS = "#[cfg(test)]\nmod tests {\n" + "    fn t() {}\n" * 20 + "}\n"

    def test_the_limit_holds_and_the_test_module_does_not_count(self):
        self.assertEqual(self.check({"lib.rs": self.TEN + self.TESTS}), ([], []))

    def test_one_line_over_fires(self):
        problems, _ = self.check({"lib.rs": self.ELEVEN})
        self.assertEqual(problems, ["app/src/lib.rs: 11 lines before its tests, over 10"])

    def test_a_test_module_in_its_own_file_does_not_count(self):
        files = {"lib.rs": "#[cfg(test)]\nmod tests;\n", "tests.rs": self.ELEVEN}
        self.assertEqual(self.check(files), ([], []))

    def test_an_allowed_file_is_printed_when_the_docs_give_its_reason(self):
        docs = "app/src/lib.rs is long: one table.\n"
        problems, notes = self.check({"lib.rs": self.ELEVEN}, docs, {"app/src/lib.rs": "one table"})
        self.assertEqual((problems, notes), ([], ["allowed long file app/src/lib.rs: 11 lines: one table"]))

    def test_an_allowed_file_the_docs_do_not_name_fires(self):
        problems, _ = self.check({"lib.rs": self.ELEVEN}, "", {"app/src/lib.rs": "one table"})
        self.assertEqual(
            problems,
            ["app/src/lib.rs: allowed over 10 lines, but neither README.md nor ARCHITECTURE.md names it with the reason"],
        )


if __name__ == "__main__":
    unittest.main()
