"""Generates src/boomerang_client/models.py, the API's types, from the server's own
OpenAPI document (`boomerang openapi`) with datamodel-code-generator (pydantic v2).

    python scripts/generate_models.py           rewrite models.py
    python scripts/generate_models.py --check   exit 1 if models.py differs from what the
                                                document gives (the types must not drift)

The binary is $BOOMERANG_BIN, else target/debug/boomerang at the repository's root.
Run it with the pinned tools of requirements.txt: another version of the generator or of
its formatters writes other text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
MODELS = PACKAGE_DIR / "src" / "boomerang_client" / "models.py"

HEADER = """\
# The Boomerang API's types, generated from its OpenAPI document (`boomerang openapi`)
# by scripts/generate_models.py with datamodel-code-generator. Do not edit: run it again."""

# Enums become Literal types (a status is a plain string), one-value wrappers are folded
# into the fields that use them, and the schema's descriptions become docstrings.
OPTIONS = [
    "--input-file-type", "openapi",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.10",
    "--enum-field-as-literal", "all",
    "--collapse-root-models",
    "--use-annotated",
    "--field-constraints",
    "--use-schema-description",
    "--use-field-description",
    "--disable-timestamp",
    "--formatters", "black", "isort",
    "--custom-file-header", HEADER,
]  # fmt: skip


def binary() -> str:
    return os.environ.get("BOOMERANG_BIN") or str(PACKAGE_DIR.parent.parent / "target" / "debug" / "boomerang")


def generate(bin: str | None = None) -> str:
    """The text models.py should hold for the document the binary prints now."""
    document = subprocess.run([bin or binary(), "openapi"], check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as work:
        source, output = Path(work, "openapi.json"), Path(work, "models.py")
        source.write_bytes(document)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "datamodel_code_generator",
                "--input",
                str(source),
                "--output",
                str(output),
                *OPTIONS,
            ],
            check=True,
            capture_output=True,
        )
        return output.read_text(encoding="utf-8")


def main() -> int:
    fresh = generate()
    if "--check" in sys.argv[1:]:
        if MODELS.read_text(encoding="utf-8") != fresh:
            print(f"{MODELS} is out of date with `{binary()} openapi`: run scripts/generate_models.py", file=sys.stderr)
            return 1
        print("models.py matches the OpenAPI document")
        return 0
    MODELS.write_text(fresh, encoding="utf-8")
    print(f"wrote {MODELS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
