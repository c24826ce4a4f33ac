"""Result types of the coverage analysis (the JSON contract of ``mobilegen check``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mobilegen.providers.base import Reason


@dataclass(frozen=True)
class NodeVerdict:
    name: str
    op_type: str
    domain: str
    supported: bool
    reasons: tuple[str, ...] = ()  # empty when supported; one or more specific reasons otherwise
    refusals: tuple[Reason, ...] = ()  # the same reasons with their rule id, category and min_api
    graph: str = ""  # "" for the main graph; else the If/Loop/Scan body holding the node ("If_0/then_branch")

    @classmethod
    def refused(cls, name: str, op_type: str, domain: str, refusals: tuple[Reason, ...], graph: str = "") -> NodeVerdict:
        return cls(name, op_type, domain, False, tuple(r.text for r in refusals), refusals, graph)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "op_type": self.op_type,
            "domain": self.domain,
            "supported": self.supported,
            "reasons": list(self.reasons),
        }
        if self.refusals:
            out["refusals"] = [r.to_dict() for r in self.refusals]
        if self.graph:
            out["graph"] = self.graph
        return out


@dataclass(frozen=True)
class CoverageReport:
    ep: str  # a name in the provider registry (mobilegen.providers)
    format: str | None  # the value of the provider's variant setting (a model format); else None
    total_nodes: int
    supported_nodes: int
    partitions: tuple[tuple[str, ...], ...]  # node names per partition, in ORT's order
    verdict: str  # "yes" / "maybe" / "no" (ORT checker thresholds)
    nodes: tuple[NodeVerdict, ...]  # every node, topological order
    suggestions: tuple[str, ...] = ()  # what would change the verdict
    settings: dict[str, object] = field(default_factory=dict)  # android_api, require_static_shapes...
    estimate: str = ""  # non-empty: every verdict is an estimate, and this says what only the device decides
    target: str = ""  # in a build: the target whose model and runtime were analysed ("android"); else ""
    title: str = ""  # how documents name it; set when one label is analysed for several targets

    @property
    def label(self) -> str:
        return f"{self.ep}/{self.format}" if self.format else self.ep

    @property
    def shown(self) -> str:
        """The label, with the target when the same provider was analysed for more than one
        (``<ep> (android)``, ``<ep> (ios)``)."""
        return self.title or self.label

    @property
    def percent(self) -> float:
        return 100.0 * self.supported_nodes / self.total_nodes if self.total_nodes else 0.0

    def unsupported_summary(self) -> list[tuple[str, int, tuple[str, ...]]]:
        """(op, count, distinct reasons) for refused nodes, most frequent first."""
        by_op: dict[str, tuple[int, list[str]]] = {}
        for n in self.nodes:
            if n.supported:
                continue
            key = f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
            count, reasons = by_op.get(key, (0, []))
            for r in n.reasons:
                if r not in reasons:
                    reasons.append(r)
            by_op[key] = (count + 1, reasons)
        return sorted(((k, c, tuple(r)) for k, (c, r) in by_op.items()), key=lambda x: (-x[1], x[0]))

    def to_dict(self) -> dict[str, object]:
        out = self._to_dict()
        if self.target:
            out["target"] = self.target
        if self.estimate:  # ExecutionProvider.estimate: the report and each of its verdicts say they are estimates
            out["estimate"] = True
            out["estimate_note"] = self.estimate
            for node in out["nodes"]:  # type: ignore[attr-defined]
                node["estimate"] = True
        return out

    def _to_dict(self) -> dict[str, object]:
        return {
            "ep": self.ep,
            "format": self.format,
            "total_nodes": self.total_nodes,
            "supported_nodes": self.supported_nodes,
            "partitions": [list(p) for p in self.partitions],
            "verdict": self.verdict,
            "suggestions": list(self.suggestions),
            "settings": dict(self.settings),
            "nodes": [n.to_dict() for n in self.nodes],
        }
