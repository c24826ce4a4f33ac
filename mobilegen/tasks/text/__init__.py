"""Text tasks' tokenizers: a Hugging Face ``tokenizer.json`` read into a frozen spec
(:mod:`~mobilegen.tasks.text.spec`), the pure-Python reference tokenizer
(:mod:`~mobilegen.tasks.text.reference`), the character classes it shares with the generated Kotlin and Swift
tokenizers (:mod:`~mobilegen.tasks.text.chars`) and the parity gate against Hugging Face ``tokenizers``
(:mod:`~mobilegen.tasks.text.parity`).
"""

from mobilegen.tasks.text.spec import TokenizerError, TokenizerSpec, load

__all__ = ["TokenizerError", "TokenizerSpec", "load"]
