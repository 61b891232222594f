"""Hermes's injection scan of memory entries: which entries its prompt shows as ``[BLOCKED: …]`` (no Qt).

Hermes scans every entry when a session starts (and every text its memory tool is asked to write)
with its "strict" set of patterns: first the entry's first 65,536 code points are searched for
invisible characters (each one present is a finding ``invisible_unicode_U+XXXX``), then the same
text, normalised to NFKC, is searched with each regular expression below, in order, case
insensitively (Python ``re``). An entry with any finding is replaced in the prompt by a
placeholder naming them; the file is never changed. An entry that already starts with
``[BLOCKED:`` is passed through unscanned.

The patterns and their ids are format facts of hermes-agent 0.19.0 (``tools/threat_patterns.py``,
MIT licence), quoted exactly; keepgui's comparison tests run Hermes's own scanner over the same
texts. When an entry holds two or more *different* invisible characters, Hermes lists them in the
order of a Python set, which changes from one Hermes process to the next: the placeholder's
wording cannot be predicted then (its length can), and :attr:`Finding.unstable` says so.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

SCAN_LIMIT = 65_536
"""Hermes scans only this many code points of an entry."""

INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u2060\u2062\u2063\u2064\ufeff\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""The invisible and bidirectional characters Hermes blocks."""

_F = r"(?:\w+\s+){0,8}"  # the bounded filler between key words

PATTERNS: tuple[tuple[str, str], ...] = (
    (rf"ignore\s+{_F}(previous|all|above|prior)\s+{_F}instructions", "prompt_injection"),
    (r"system\s+prompt\s+override", "sys_prompt_override"),
    (rf"disregard\s+{_F}(your|all|any)\s+{_F}(instructions|rules|guidelines)", "disregard_rules"),
    (
        rf"act\s+as\s+(if|though)\s+{_F}you\s+{_F}(have\s+no|don\'t\s+have)\s+{_F}(restrictions|limits|rules)",
        "bypass_restrictions",
    ),
    (r"<!--[^>]{0,512}(?:ignore|override|system|secret|hidden)[^>]{0,512}-->", "html_comment_injection"),
    (r"<\s*div\s+style\s*=\s*[\"\'][^>]{0,2048}display\s*:\s*none", "hidden_div"),
    (r"translate\s+[^\n]{0,512}\s+into\s+[^\n]{0,512}\s+and\s+(execute|run|eval)", "translate_execute"),
    (rf"do\s+not\s+{_F}tell\s+{_F}the\s+user", "deception_hide"),
    (rf"you\s+are\s+{_F}now\s+(?:a|an|the)\s+", "role_hijack"),
    (rf"pretend\s+{_F}(you\s+are|to\s+be)\s+", "role_pretend"),
    (rf"output\s+{_F}(system|initial)\s+prompt", "leak_system_prompt"),
    (rf"(respond|answer|reply)\s+without\s+{_F}(restrictions|limitations|filters|safety)", "remove_filters"),
    (rf"you\s+have\s+been\s+{_F}(updated|upgraded|patched)\s+to", "fake_update"),
    (r"\bname\s+yourself\s+\w+", "identity_override"),
    (r"register\s+(as\s+)?a?\s*node", "c2_node_registration"),
    (r"(heartbeat|beacon|check[\s\-]?in)\s+(to|with)\s+", "c2_heartbeat"),
    (r"pull\s+(down\s+)?(?:new\s+)?task(?:ing|s)?\b", "c2_task_pull"),
    (r"connect\s+to\s+the\s+network\b", "c2_network_connect"),
    (r"you\s+must\s+(?:\w+\s+){0,3}(register|connect|report|beacon)\b", "forced_action"),
    (r"only\s+use\s+one[\s\-]?liners?\b", "anti_forensic_oneliner"),
    (rf"never\s+{_F}(?:create|write)\s+{_F}(?:script|file)\s+{_F}disk", "anti_forensic_disk"),
    (r"unset\s+\w*(?:CLAUDE|CODEX|HERMES|AGENT|OPENAI|ANTHROPIC)\w*", "env_var_unset_agent"),
    (r"\b(?:cobalt\s*strike|sliver|havoc|mythic|metasploit|brainworm)\b", "known_c2_framework"),
    (r"\bc2\s+(?:server|channel|infrastructure|beacon)\b", "c2_explicit"),
    (r"\bcommand\s+and\s+control\b", "c2_explicit_long"),
    (r"curl\s+[^\n]{0,2048}\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)", "exfil_curl"),
    (r"wget\s+[^\n]{0,2048}\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)", "exfil_wget"),
    (r"cat\s+[^\n]{0,2048}(\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)", "read_secrets"),
    (r"(send|post|upload|transmit)\s+[^\n]{0,2048}\s+(to|at)\s+https?://", "send_to_url"),
    (
        rf"(include|output|print|share)\s+{_F}(conversation|chat\s+history|previous\s+messages|full\s+context|entire\s+context)",
        "context_exfil",
    ),
    (r"authorized_keys", "ssh_backdoor"),
    (r"\$HOME/\.ssh|\~/\.ssh", "ssh_access"),
    (r"\$HOME/\.hermes/\.env|\~/\.hermes/\.env", "hermes_env"),
    (
        r"(update|modify|edit|write|change|append|add\s+to)\s+[^\n]{0,2048}(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)",
        "agent_config_mod",
    ),
    (
        r"(update|modify|edit|write|change|append|add\s+to)\s+[^\n]{0,2048}\.hermes/(config\.yaml|SOUL\.md)",
        "hermes_config_mod",
    ),
    (r"(?:api[_-]?key|token|secret|password)\s*[=:]\s*[\"\'][A-Za-z0-9+/=_-]{20,}", "hardcoded_secret"),
)
"""Hermes's "strict" patterns (every scope applies to memory), in its order, with their ids."""

_COMPILED = tuple((re.compile(pattern, re.IGNORECASE), pid) for pattern, pid in PATTERNS)

REASONS = {
    "c2_heartbeat": "“check in with …”, “heartbeat to …” read as malware phoning home",
    "c2_task_pull": "“pull tasks” reads as malware fetching orders",
    "known_c2_framework": "a name shared with an attack framework (Havoc, Mythic, Sliver…)",
    "agent_config_mod": "an instruction to edit AGENTS.md, CLAUDE.md or .cursorrules",
    "hermes_config_mod": "an instruction to edit Hermes's config.yaml or SOUL.md",
    "hardcoded_secret": "what looks like a password or API key",
}
"""Plain words for the findings that ordinary notes trip most often."""


@dataclass(frozen=True)
class Finding:
    """What the scan found in one text: the ids in Hermes's order, and whether that order varies
    between Hermes processes (two or more different invisible characters)."""

    ids: tuple[str, ...] = ()
    unstable: bool = False


def scan(text: str) -> Finding:
    """Scan ``text`` as Hermes scans a memory entry (see the module docstring)."""
    if not text:
        return Finding()
    head = text[:SCAN_LIMIT]
    invisible = sorted(INVISIBLE.intersection(head))
    ids = [f"invisible_unicode_U+{ord(ch):04X}" for ch in invisible]
    normalised = unicodedata.normalize("NFKC", head)
    ids.extend(pid for compiled, pid in _COMPILED if compiled.search(normalised))
    return Finding(tuple(ids), len(invisible) > 1)


def placeholder(file_name: str, ids: tuple[str, ...]) -> str:
    """What the prompt shows instead of a blocked entry of ``file_name``."""
    return (
        f"[BLOCKED: {file_name} entry contained threat pattern(s): {', '.join(ids)}. "
        "Removed from system prompt; use memory(action=remove) to delete the original.]"
    )


def refusal(ids: tuple[str, ...]) -> str:
    """The message Hermes's memory tool gives when it refuses to write a text with these findings."""
    first = ids[0]
    if first.startswith("invisible_unicode_"):
        return f"Blocked: content contains invisible unicode character {first[len('invisible_unicode_') :]} (possible injection)."
    return (
        f"Blocked: content matches threat pattern '{first}'. Content is injected into the system prompt "
        "and must not contain injection or exfiltration payloads."
    )


def explain(ids: tuple[str, ...]) -> str:
    """One sentence for a person: why Hermes blocks this entry from its prompt."""
    words = [REASONS[i] for i in ids if i in REASONS]
    invisible = [i[len("invisible_unicode_") :] for i in ids if i.startswith("invisible_unicode_")]
    parts = []
    if invisible:
        parts.append("invisible characters " + ", ".join(invisible) + " (an emoji sequence or a BOM can hold them)")
    parts.extend(words)
    why = "; ".join(parts) if parts else ", ".join(ids)
    return f"Hermes's injection scan blocks this entry from its prompt ({', '.join(ids)}): {why}."
