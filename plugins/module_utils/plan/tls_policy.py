"""When the generated pgBackRest TLS material (`pgbackrestTLS.mode: auto`) is issued, renewed and
rotated. Pure: it reads only the Secrets' annotations (keys.ANN_TLS_*) and the pass's `now`; the
apply step (apply.py with kube/tls.py) makes the key material.

- A certificate or CA is due when less than RENEW_FRACTION of its validity remains (275 of the 825
  days of a certificate, 1217 of the 3650 days of a CA).
- A due CA is rotated in two steps so that no pod ever meets a certificate it does not trust:
  1. stage: a successor CA joins the trust bundle (`ca.crt` of the CA Secret) while the old CA keeps
     signing; the certificate is re-issued by the old CA so its Secret carries the new bundle too.
  2. promote: the successor signs; the certificate is re-issued by it. The bundle keeps the old CA
     until it expires, for pods that still hold the old certificate. Promotion waits CA_OVERLAP (the
     kubelet refreshes mounted Secrets, and each pgBackRest command reads them afresh) and until
     every pool pod was created after the stage: pgBackRest's TLS server (`pgbackrest server`,
     started by pgctld) loads its trust bundle when it starts, so an older pod would refuse the
     successor's certificates. Pods restart with any rolling update; without one, promotion is
     forced once the old CA is down to CA_FORCE_FRACTION of its validity (608 days), still long
     before the old certificates expire.
- The certificate is re-issued when the pods' names change, when its issuer no longer signs, when
  its expiry is unknown (Secrets from before this module) and when it is due.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..core import keys
from ..core.manifest import Manifest
from ..state import facts
from ..state.desired import GeneratedTLS

CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=825)
RENEW_FRACTION = 1 / 3
# Long enough for the kubelet to refresh every pod's mounted bundle (about a minute) with a wide
# margin; renewals start years before expiry, so a day costs nothing.
CA_OVERLAP = dt.timedelta(hours=24)
CA_FORCE_FRACTION = 1 / 6


class Step(StrEnum):
    ISSUE = "issue"  # create the CA if missing; (re)issue the certificate from the signing CA
    STAGE_CA = "stage-ca"  # publish a successor CA in the bundle; re-issue the certificate from the old CA
    PROMOTE_CA = "promote-ca"  # the successor signs; re-issue the certificate from it


@dataclass(frozen=True)
class Validity:
    issued_at: dt.datetime
    not_after: dt.datetime

    @property
    def renew_at(self) -> dt.datetime:
        return self.not_after - (self.not_after - self.issued_at) * RENEW_FRACTION

    @classmethod
    def of(cls, secret: Manifest | None) -> Validity | None:
        """From a Secret's annotations; None when absent or unreadable."""
        ann = facts.annotations(secret) if secret else {}
        issued, not_after = facts.parse_time(ann.get(keys.ANN_TLS_ISSUED_AT)), facts.parse_time(
            ann.get(keys.ANN_TLS_NOT_AFTER))
        return cls(issued, not_after) if issued and not_after else None


@dataclass(frozen=True)
class Decision:
    step: Step
    reason: str
    renewal: bool  # something that existed is replaced (reported as an event), not a first issue


def staged_at(ca: Manifest | None) -> dt.datetime | None:
    return facts.parse_time(facts.annotations(ca).get(keys.ANN_TLS_CA_STAGED_AT)) if ca else None


def promotes_at(ca: Manifest | None) -> dt.datetime | None:
    """The earliest promotion of a staged successor CA (it may still wait for pods, see above)."""
    staged = staged_at(ca)
    return staged + CA_OVERLAP if staged else None


def forced_at(ca: Manifest | None) -> dt.datetime | None:
    """When a staged successor is promoted even though pods from before the stage still run."""
    validity = Validity.of(ca)
    if validity is None:
        return None
    return validity.not_after - (validity.not_after - validity.issued_at) * CA_FORCE_FRACTION


def pods_from_before_stage(ca: Manifest | None, pods: Iterable[Manifest]) -> list[str]:
    """Pool pods created before the successor CA was staged: their pgBackRest servers do not trust it."""
    staged = staged_at(ca)
    if staged is None:
        return []
    return sorted(facts.name(p) for p in pods if not facts.is_terminating(p)
                  and (facts.parse_time(facts.meta(p).get("creationTimestamp")) or staged) < staged)


def _promotes_now(ca: Manifest, pods: Iterable[Manifest], now: dt.datetime) -> bool:
    promote, forced = promotes_at(ca), forced_at(ca)
    if promote is None or now < promote:
        return False
    return not pods_from_before_stage(ca, pods) or (forced is not None and now >= forced)


def decide(gen: GeneratedTLS, ca: Manifest | None, leaf: Manifest | None, now: dt.datetime,
           pods: Iterable[Manifest] = ()) -> Decision | None:
    """What the apply step must do now, or None. `ca` and `leaf` are the Secrets' metadata, `pods`
    the shard's pool pods."""
    if ca is None:
        return Decision(Step.ISSUE, f"create pgBackRest CA Secret {gen.ca_secret} and certificate Secret "
                                    f"{gen.tls_secret} (mode auto)", renewal=False)
    promote = promotes_at(ca)
    if promote is not None and _promotes_now(ca, pods, now):
        return Decision(Step.PROMOTE_CA, f"CA Secret {gen.ca_secret}: the successor CA published at "
                                         f"{facts.format_time(promote - CA_OVERLAP)} now signs; re-issue certificate "
                                         f"Secret {gen.tls_secret} from it", renewal=True)
    if leaf is None:
        return Decision(Step.ISSUE, f"issue pgBackRest certificate Secret {gen.tls_secret} from CA {gen.ca_secret} "
                                    "(mode auto)", renewal=False)
    ca_validity = Validity.of(ca)
    if ca_validity is None:
        return Decision(Step.ISSUE, f"re-issue pgBackRest certificate Secret {gen.tls_secret} and record the expiry "
                                    f"of CA Secret {gen.ca_secret} (not recorded yet)", renewal=True)
    if promote is None and now >= ca_validity.renew_at:
        return Decision(Step.STAGE_CA, f"CA Secret {gen.ca_secret} expires at "
                                       f"{facts.format_time(ca_validity.not_after)}: publish a successor CA in the "
                                       f"trust bundle; it signs from {facts.format_time(now + CA_OVERLAP)}",
                        renewal=True)
    ann = facts.annotations(leaf)
    if ann.get(keys.ANN_TLS_FINGERPRINT) != gen.fingerprint:
        return Decision(Step.ISSUE, f"re-issue pgBackRest certificate Secret {gen.tls_secret}: the pool pods' names "
                                    "changed", renewal=True)
    if ann.get(keys.ANN_TLS_ISSUER) != facts.annotations(ca).get(keys.ANN_TLS_CA_ID):
        return Decision(Step.ISSUE, f"re-issue pgBackRest certificate Secret {gen.tls_secret}: its issuer is not "
                                    f"the signing CA of {gen.ca_secret}", renewal=True)
    leaf_validity = Validity.of(leaf)
    if leaf_validity is None:
        return Decision(Step.ISSUE, f"re-issue pgBackRest certificate Secret {gen.tls_secret}: its expiry is not "
                                    "recorded", renewal=True)
    if now >= leaf_validity.renew_at:
        return Decision(Step.ISSUE, f"renew pgBackRest certificate Secret {gen.tls_secret}: it expires at "
                                    f"{facts.format_time(leaf_validity.not_after)}", renewal=True)
    return None


def status(gen: GeneratedTLS, ca: Manifest | None, leaf: Manifest | None,
           pods: Iterable[Manifest] = ()) -> Manifest | None:
    """status.pgbackrestTLS: when the certificate was issued, when it and the CA expire, and when the
    next renewal or CA promotion is due (and which pods a promotion waits for). None until both
    Secrets carry their dates."""
    ca_validity, leaf_validity = Validity.of(ca), Validity.of(leaf)
    if ca_validity is None or leaf_validity is None:
        return None
    renewals = [leaf_validity.renew_at, ca_validity.renew_at]
    promote = promotes_at(ca)
    out: Manifest = {
        "certificateSecret": gen.tls_secret,
        "certificateIssuedAt": facts.format_time(leaf_validity.issued_at),
        "certificateNotAfter": facts.format_time(leaf_validity.not_after),
        "caSecret": gen.ca_secret,
        "caIssuedAt": facts.format_time(ca_validity.issued_at),
        "caNotAfter": facts.format_time(ca_validity.not_after),
        "nextRenewal": facts.format_time(min([promote] if promote else renewals)),
    }
    if promote:
        out["caPromotesAt"] = facts.format_time(promote)
        waiting = pods_from_before_stage(ca, pods)
        if waiting:
            out["caPromotionWaitsFor"] = waiting
            forced = forced_at(ca)
            if forced:
                out["caPromotionForcedAt"] = facts.format_time(forced)
    return out
