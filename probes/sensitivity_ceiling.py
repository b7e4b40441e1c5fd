"""Probe: the sensitivity ceiling keeps supported facts above ``internal`` out of context.

**Scenario.** The user states three true facts about the payroll service in chat, one at each of
``internal``, ``confidential`` and ``secret`` sensitivity. The agent recalls under every ordinary
preset.

**Asserts.**
- All three are adopted ``supported`` + ``normal`` + ``clean``: truth is not what excludes them.
- Under ``default`` (ceiling ``internal``) the ``internal`` fact is accepted; the ``confidential``
  and ``secret`` facts are rejected with exactly one reason, code ``sensitivity``.
- Under ``planner`` and ``reference`` too, neither is accepted, quoted nor shown, and their text is
  not in the rendered context.

**Does not claim.** That sensitivity labels are right: they are given by the host when it records
an observation, and a secret recorded as ``internal`` is treated as internal. Nor that a secret
never reaches the model by another route (tool output the agent reads directly).
"""

from __future__ import annotations

from gnomon.firewall import Origin, RetrievalStatus, SecurityStatus, Sensitivity, TruthStatus
from gnomon.probes._fixtures import coder_session
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "sensitivity_ceiling"
TITLE = (
    "Supported facts above the policy's sensitivity ceiling are rejected with reason sensitivity"
)

FACTS = {
    Sensitivity.INTERNAL: "The payroll service runs in the narwhal cluster.",
    Sensitivity.CONFIDENTIAL: "The payroll service narwhal admin password rotates on the 1st.",
    Sensitivity.SECRET: "The payroll service narwhal signing key is kept in vault path k9.",
}
QUERY = "payroll service narwhal"


def check(url: str, c: Checks) -> None:
    with coder_session(url, NAME) as (wall, s):
        ids: dict[Sensitivity, str] = {}
        for level, text in FACTS.items():
            (fact,) = s.observe(
                tool="chat",
                content=text,
                origin=wall.channel(Origin.user("alice")),
                sensitivity=level,
            ).content
            c.expect(
                (fact.truth_status, fact.retrieval_status, fact.security_status)
                == (TruthStatus.SUPPORTED, RetrievalStatus.NORMAL, SecurityStatus.CLEAN),
                f"the {level.value} user fact is supported+normal+clean",
                got=(fact.truth_status.value, fact.retrieval_status.value),
            )
            ids[level] = fact.id

        result = s.recall(QUERY, "default")
        c.expect(
            ids[Sensitivity.INTERNAL] in result.accepted_ids,
            "the internal fact is accepted under default",
            got=result.accepted_ids,
        )
        reasons = {r.belief_id: r.codes for r in result.rejected}
        for level in (Sensitivity.CONFIDENTIAL, Sensitivity.SECRET):
            c.expect(
                ids[level] not in result.accepted_ids,
                f"the {level.value} fact is not accepted under default",
            )
            c.expect(
                reasons.get(ids[level]) == ("sensitivity",),
                f"the {level.value} fact is rejected with exactly reason code sensitivity",
                got=reasons.get(ids[level]),
            )

        above = {ids[Sensitivity.CONFIDENTIAL], ids[Sensitivity.SECRET]}
        for preset in ("default", "planner", "reference"):
            seen = s.recall(QUERY, preset)
            shown = {b.id for b in seen.shown()}
            c.expect(
                not above & shown,
                f"nothing above internal is accepted, quoted or shown under {preset}",
                got=sorted(above & shown),
            )
            rendered = seen.render()
            c.expect(
                "password" not in rendered and "signing key" not in rendered,
                f"no text above internal is rendered under {preset}",
            )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
