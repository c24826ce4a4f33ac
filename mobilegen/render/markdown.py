"""Untrusted text (model names, tensor names, reasons) in generated Markdown: one escaper, one code-span
maker, used by every README and report mobilegen writes."""

from __future__ import annotations

from typing import Any

_MD_SPECIAL = set("\\`*_[]<>|#&!~")


def _one_line(text: object) -> str:
    s = " ".join(str(text).splitlines())
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in s)


def md_escape(text: object) -> str:
    """Backslash-escape Markdown punctuation (CommonMark allows it before any ASCII punctuation); one line,
    control characters replaced — no HTML, links, emphasis or table breaks can come from ``text``."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in _one_line(text))


def md_code(text: object) -> str:
    """An inline code span holding ``text`` verbatim (fence longer than any backtick run inside)."""
    s = _one_line(text)
    longest = run = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def coverage_rows(coverage: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Markdown-safe rows of the coverage reports for the generated READMEs (every value escaped)."""
    rows = []
    for rep in coverage:
        summary = rep.unsupported_summary()
        brief = [f"{op} ×{count}" + (f" ({'; '.join(reasons[:2])})" if reasons else "") for op, count, reasons in summary[:8]]
        rows.append(
            {
                "label": md_escape(rep.shown),
                "supported": rep.supported_nodes,
                "total": rep.total_nodes,
                "nodes": f"{rep.supported_nodes}/{rep.total_nodes}",
                "percent": f"{rep.percent:.1f}",
                "partitions": len(rep.partitions),
                # a provider whose verdicts are estimates: "yes (estimate)"; the sentence on what only the device decides is a README note
                "verdict": md_escape(rep.verdict + (" (estimate)" if rep.estimate else "")),
                "estimate": md_escape(rep.estimate),
                "unsupported": [
                    {"op": md_escape(op), "count": count, "reasons": md_escape("; ".join(reasons)[:200])}
                    for op, count, reasons in summary[:10]
                ],
                "unsupported_text": md_escape(", ".join(brief)) if brief else "none",
                "suggestions": [md_escape(s) for s in rep.suggestions[:5]],
            }
        )
    return rows
