"""One error tree for everything Gnomon refuses.

Every failure a user can act on has its own type, and every message says what was wrong and what
to do about it. The CLI catches :class:`GnomonError` once and exits non-zero; nothing below it
should let a driver or parser exception escape raw.

::

    GnomonError
    ├── InputError                    bad input at an edge (content, ids, origins, arguments)
    │   ├── InvalidContentError       binary, invalid UTF-8, empty or oversized content
    │   ├── InvalidOriginError        an origin that cannot be parsed or is not allowed here
    │   └── UnknownIdError            a belief / claim / session id that does not exist
    ├── PolicyError                   a ContextPolicy that cannot be loaded or is invalid
    │   └── UnsignedPolicyError       an action policy unsigned, tampered or signed by no pinned key
    ├── GateError                     the belief gate refused a move
    │   ├── TransitionRefused         the move is not in the axis table, or the authority lacks it
    │   ├── ParallaxError             reading-class evidence cannot make a claim supported
    │   ├── SelfPromotionError        an agent's own outcome cannot promote what it acted on
    │   └── TerminalStateError        `malicious` / `blocked` / `superseded` cannot move again
    ├── GrantError                    authority that was not properly granted
    │   ├── ForgedGrantError          signature does not verify against a pinned key
    │   ├── ExpiredGrantError         the grant's validity window is over
    │   ├── GrantScopeError           the grant does not cover this project or belief
    │   ├── SpentGrantError           a single-use (promoting) grant was already used
    │   ├── MissingGrantError         a privileged operation was called without a grant
    │   ├── UnattestedOriginError     an agent-facing path asserted an authority-bearing origin
    │   │   └── ForgedChannelError    a channel object the host's firewall never opened
    │   └── ForgedApprovalError       forged, replayed, expired, unpinned or other inputs
    ├── ActionError                   the action kernel refused to run something
    │   ├── ContractError             an action contract below its tool's floor, or malformed
    │   ├── ActionPendingError        an action still waiting for (or denied) approval
    │   └── ListingChangedError       an MCP server's tool metadata differs from its pin
    ├── StoreError                    the backing store failed
    │   ├── StoreLockedError          another process holds the database lock
    │   ├── StoreCorruptError         the file or schema is not a Gnomon store
    │   ├── UnsupportedURLError       `firewall.open` does not know the URL scheme
    │   └── UnsealedStoreError        a store opened without its sealing key: no authority
    ├── LogIntegrityError             the event chain does not verify (names the first bad seq)
    │   ├── LogFormatError            an NDJSON log file that cannot be read (names the line)
    │   ├── CheckpointError           a signed checkpoint that is forged, unpinned or disagrees
    │   ├── RedactionError            an event above the ceiling that cannot be redacted verifiably
    │   ├── CertificateError          an erasure certificate forged, edited, unpinned or untrue
    │   └── TamperedLogError          an event or the log's head not sealed by the host's key
    └── KeyFileError                  a key file that cannot be read or parsed
"""

from __future__ import annotations


class GnomonError(Exception):
    """Root of every error Gnomon raises on purpose.

    ``hint`` carries the "how to fix it" sentence so the CLI can print it on its own line.
    """

    #: The longest message kept (characters): a message that quotes a refused value must
    #: not carry a 4 MiB argument into a log line or a terminal.
    MAX_MESSAGE = 2000

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        if len(message) > self.MAX_MESSAGE:
            cut = len(message) - self.MAX_MESSAGE
            message = f"{message[: self.MAX_MESSAGE]}... ({cut} more characters not shown)"
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} (hint: {self.hint})"
        return self.message


class InputError(GnomonError):
    """Input at an edge of the library was malformed or hostile."""


class InvalidContentError(InputError):
    """Observed or remembered content is binary, not UTF-8, empty or too large."""


class InvalidOriginError(InputError):
    """An origin label could not be parsed, or is not allowed on this path."""


class UnknownIdError(InputError):
    """A referenced id (belief, claim, observation, decision, session) does not exist."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(
            f"unknown {kind} id {ident!r}",
            hint=f"list existing ids with `gnomon beliefs list`; {kind} ids are case-sensitive",
        )
        self.kind = kind
        self.ident = ident


class PolicyError(GnomonError):
    """A ContextPolicy could not be loaded, parsed or validated."""


class UnsignedPolicyError(PolicyError):
    """An action policy is unsigned, tampered with, or signed by a key nobody pinned."""


class GateError(GnomonError):
    """The belief gate refused a state change."""


class TransitionRefused(GateError):
    """A move that is not in the axis table, or that the acting authority may not make."""

    def __init__(
        self,
        *,
        axis: str,
        from_state: str,
        to_state: str,
        authority: str,
        allowed: frozenset[str] | None,
        belief_id: str | None = None,
    ) -> None:
        where = f" on belief {belief_id}" if belief_id else ""
        if not allowed:
            message = (
                f"{axis} move {from_state} -> {to_state}{where} is not in the {axis} transition "
                f"table (attempted by authority {authority!r})"
            )
            hint = "this move is never allowed; see `firewall.gate.gate.TRANSITIONS`"
        else:
            need = ", ".join(sorted(allowed))
            message = (
                f"{axis} move {from_state} -> {to_state}{where} refused: authority {authority!r} "
                f"is missing; the move needs one of: {need}"
            )
            hint = "obtain a grant for one of those authorities (`Firewall.grant`)"
        super().__init__(message, hint=hint)
        self.axis = axis
        self.from_state = from_state
        self.to_state = to_state
        self.authority = authority
        self.allowed = allowed or frozenset()
        self.belief_id = belief_id


class ParallaxError(GateError):
    """Reading-class evidence (external documents, model inference) cannot promote a claim."""


class SelfPromotionError(GateError):
    """The agent's own outcome cannot count as evidence for a belief it acted on."""


class TerminalStateError(GateError):
    """The belief is in a terminal state on that axis and cannot move."""


class GrantError(GnomonError):
    """Authority was claimed without a valid grant."""


class ForgedGrantError(GrantError):
    """A grant's signature does not verify against any pinned key."""


class ExpiredGrantError(GrantError):
    """A grant is outside its validity window."""


class MissingGrantError(GrantError):
    """A privileged operation was attempted without a grant of the required authority."""


class UnattestedOriginError(GrantError):
    """An agent-facing path asserted a user, probe or tool origin without a host channel.

    Authority-bearing origins enter only through a :class:`~firewall.host.channels.Channel` the
    host opened with :meth:`Firewall.channel`; a caller's own assertion can only lower trust.
    """


class ForgedChannelError(UnattestedOriginError):
    """A channel object that this firewall never opened (built by hand, or another firewall's)."""


class GrantScopeError(GrantError):
    """A valid grant was used outside its stated scope (another project, an uncovered belief)."""


class SpentGrantError(GrantError):
    """A grant that promotes is single-use, and this one was already used (the store says so)."""


class ForgedApprovalError(GrantError):
    """An approval that must not execute: forged, replayed, expired, by an unpinned key, or
    bound to another request, action, policy or set of inputs. ``kind`` names which."""

    def __init__(self, kind: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind


class ActionError(GnomonError):
    """The action kernel refused to run an action."""


class ContractError(ActionError):
    """An action contract is malformed or below its tool's own floor on the trust ladder."""


class ActionPendingError(ActionError):
    """An action is still held for approval (or was denied): it cannot execute."""


class ListingChangedError(ActionError):
    """An MCP server behind the proxy lists tools (descriptions, schemas, annotations) that
    differ from what was pinned: the proxy serves none of them until the operator accepts."""


class StoreError(GnomonError):
    """The backing store failed; the message names the store."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock for longer than the busy timeout."""


class StoreCorruptError(StoreError):
    """The store exists but is not a readable Gnomon store (corrupt file or foreign schema)."""


class UnsupportedURLError(StoreError):
    """`firewall.open` was given a URL whose scheme has no backend."""


class UnsealedStoreError(StoreError):
    """The store was opened without its sealing key (:mod:`firewall.log.seal`): it can be read,
    but nothing that carries authority (a commit, a channel, a grant, an approval, a flag, an
    execution) may be written to it, because nothing it wrote could be told from a forgery."""


class LogIntegrityError(GnomonError):
    """The event chain failed verification; ``seq`` is the first bad sequence number."""

    def __init__(self, seq: int, problem: str) -> None:
        super().__init__(
            f"event log fails verification at seq {seq}: {problem}",
            hint="the log was edited, truncated or reordered after it was written; "
            "restore from a verified export",
        )
        self.seq = seq
        self.problem = problem


class LogFormatError(LogIntegrityError):
    """An NDJSON log file is not valid: torn or partial line, bad JSON, not UTF-8, unknown
    format or schema version. Names the file, the line and (when it could be read) the seq."""

    def __init__(self, source: str, line: int, problem: str, *, seq: int | None = None) -> None:
        where = f"{source} line {line}" + (f" (seq {seq})" if seq is not None else "")
        GnomonError.__init__(
            self,
            f"{where}: {problem}",
            hint="nothing was imported; fix or re-export the file (`gnomon log export`)",
        )
        self.seq = seq if seq is not None else 0
        self.problem = problem
        self.source = source
        self.line = line


class CheckpointError(LogIntegrityError):
    """A signed checkpoint does not verify (forged, edited, unpinned key) or does not match the
    chain it claims to cover."""

    def __init__(self, seq: int, problem: str) -> None:
        GnomonError.__init__(
            self,
            f"checkpoint check fails at seq {seq}: {problem}",
            hint="the log or the checkpoint was rewritten; restore from a verified export and "
            "check which key signed the checkpoint",
        )
        self.seq = seq
        self.problem = problem


class CertificateError(LogIntegrityError):
    """An erasure certificate does not verify: its signature (forged, edited, unpinned key) or
    its claims against the log (an event it lists is not erased as it says)."""

    def __init__(self, seq: int, problem: str) -> None:
        GnomonError.__init__(
            self,
            f"erasure certificate check fails at seq {seq}: {problem}",
            hint="do not rely on this certificate; re-run `gnomon forget` and keep the new one",
        )
        self.seq = seq
        self.problem = problem


class RedactionError(LogIntegrityError):
    """A shipped export would have to redact an event whose link needs its whole body (hash
    version 1, written before gnomon hashed bodies through their digest): shipping it would
    either leak the text above the ceiling or break the chain, so the export is refused."""


class TamperedLogError(LogIntegrityError):
    """An event read by something that acts on it is not sealed by the host (forged, edited,
    renumbered, re-chained, or written without the key), or the log's tail was cut back below
    the host's sealed head, or a projection row (``row``, e.g. ``beliefs/b_...``; ``seq`` 0)
    does not carry the host's seal. ``seq`` names the event (or the head), ``problem`` what is
    wrong; the store records it once as a ``log.tamper_detected`` event when it can."""

    def __init__(
        self, seq: int, problem: str, *, hint: str | None = None, row: str | None = None
    ) -> None:
        where = f"store row {row} is tampered" if row else f"event log is tampered at seq {seq}"
        GnomonError.__init__(
            self,
            f"{where}: {problem}; refused",
            hint=hint
            or "something other than the host wrote the store's files; nothing was obeyed. "
            "Run `gnomon log verify` to list every bad event and `gnomon doctor`",
        )
        self.seq = seq
        self.problem = problem
        #: The projection row (``table/id``) when a row, not an event, failed its seal.
        self.row = row


class KeyFileError(GnomonError):
    """A key file could not be read or is not an Ed25519 key in the expected format."""


__all__ = [
    "ActionError",
    "ActionPendingError",
    "CertificateError",
    "CheckpointError",
    "ContractError",
    "ExpiredGrantError",
    "ForgedApprovalError",
    "ForgedChannelError",
    "ForgedGrantError",
    "GateError",
    "GnomonError",
    "GrantError",
    "GrantScopeError",
    "InputError",
    "InvalidContentError",
    "InvalidOriginError",
    "KeyFileError",
    "ListingChangedError",
    "LogFormatError",
    "LogIntegrityError",
    "MissingGrantError",
    "ParallaxError",
    "PolicyError",
    "RedactionError",
    "SelfPromotionError",
    "SpentGrantError",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "TamperedLogError",
    "TerminalStateError",
    "TransitionRefused",
    "UnattestedOriginError",
    "UnknownIdError",
    "UnsealedStoreError",
    "UnsignedPolicyError",
    "UnsupportedURLError",
]
