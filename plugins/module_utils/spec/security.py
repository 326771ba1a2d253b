"""The security parts of the MultigresShard API (docs/api.md, "Security"): who may reach a shard's
pods (`spec.security`: pg_hba source networks and the shard's NetworkPolicy), and the rules that keep
user-supplied settings from taking over what the engine owns (postgresql.conf lines, our label and
annotation keys). `model.py` assembles them into the spec.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, StringConstraints

from ..core import keys
from .postgres_conf import CONTROL_CEL, has_control_character
from .rules import Rule, SpecModel, wire_value

# Kubernetes label keys (optional DNS prefix) and values: node labels, pod labels, selectors.
LabelKey = Annotated[
    str, StringConstraints(pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
                           max_length=317),
]
LabelValue = Annotated[str, StringConstraints(pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$",
                                              max_length=63)]
# A Kubernetes object name (DNS subdomain).
ObjectName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)]
# A DNS name a certificate can carry (RFC 1123 labels, lower case).
DnsName = Annotated[str, StringConstraints(
    pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=253)]


def _cidr(text: str) -> str:
    try:
        ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        raise ValueError(f"not a network in CIDR notation: {exc}") from None
    return text


# The pattern is what the apiserver checks; Python also refuses host bits and bad octets.
Cidr = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F:.]+/[0-9]{1,3}$", max_length=43),
                 AfterValidator(_cidr)]

# The private address ranges (RFC 1918, RFC 6598 shared space, IPv6 unique local) where Kubernetes pod
# networks live: pg_hba accepts SCRAM logins from these and from the pod itself, nothing else.
DEFAULT_POD_NETWORK_CIDRS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")


# --- NetworkPolicy peers ---------------------------------------------------------------------------
class LabelSelector(SpecModel):
    """Select by labels; an empty selector selects everything."""

    match_labels: dict[LabelKey, LabelValue] = Field({}, max_length=16, description="Labels to match.")


class IPBlock(SpecModel):
    cidr: Cidr = Field(description="Source network, e.g. 10.8.0.0/16.")
    except_: list[Cidr] = Field([], alias="except", max_length=16, description="Networks inside `cidr` to leave out.")


class NetworkPeer(SpecModel):
    """Where traffic may come from, as in a NetworkPolicy rule: pods (`podSelector`, in the shard's
    namespace unless `namespaceSelector` is set), every pod of some namespaces (`namespaceSelector`
    alone), or addresses (`ipBlock`)."""

    __rules__: ClassVar = (
        Rule(
            name="network-peer-one-kind",
            cel="has(self.ipBlock) != (has(self.podSelector) || has(self.namespaceSelector))",
            message="a peer is either an ipBlock or pod/namespace selectors, not both and not neither",
            check=lambda p: (p.ip_block is not None) != (
                p.pod_selector is not None or p.namespace_selector is not None),
        ),
    )

    pod_selector: LabelSelector | None = Field(None, description="Pods with these labels.")
    namespace_selector: LabelSelector | None = Field(None, description="Namespaces with these labels.")
    ip_block: IPBlock | None = Field(None, description="Source addresses.")


_AGENT_PEER = {
    "namespaceSelector": {"matchLabels": {keys.LABEL_NAMESPACE_NAME: keys.INSTALL_NAMESPACE}},
    "podSelector": {"matchLabels": {keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME,
                                    keys.LABEL_APP_COMPONENT: keys.AGENT_COMPONENT}},
}


class NetworkPolicySettings(SpecModel):
    """The shard's NetworkPolicy (docs/api.md, "Security"): it isolates every pod of the shard for
    ingress and admits only the ports the pool needs, from the pods that need them."""

    enabled: bool = Field(True, description="Render the NetworkPolicy. Turning it off later deletes the "
                                            "one this shard made (pruning, docs/architecture.md).")
    agent: NetworkPeer = Field(
        _AGENT_PEER, validate_default=True,
        description="The multigres-pools agent, which dials every multipooler's gRPC port. Default: the "
                    f"install bundle's agent pods in namespace {keys.INSTALL_NAMESPACE}.",
    )
    clients: list[NetworkPeer] = Field(
        [{"podSelector": {}}], validate_default=True, max_length=16,
        description="Who may open PostgreSQL connections (pool pods' port 5432, the multigateway's 15432); "
                    "SCRAM still applies. Default: every pod in the shard's namespace. [] admits no client.",
    )
    metrics: list[NetworkPeer] = Field(
        [{"namespaceSelector": {}}], validate_default=True, max_length=16,
        description="Who may scrape postgres-exporter (port 9187, when enabled). Default: every pod of "
                    "every namespace; narrow it to your Prometheus.",
    )


class GrpcTLS(SpecModel):
    """Mutual TLS on Multigres' gRPC (v0.1.0 only; docs/operations.md, "TLS for gRPC"). One Secret
    serves every process of the shard: multipooler, multiorch and multigateway serve with it and
    require a client certificate signed by its ca.crt; multiorch and multigateway present it when they
    dial a multipooler (or another gateway). pgctld's gRPC stays plaintext inside the pod: multipooler
    v0.1.0 has no TLS client for it, so it is bound to the pod's loopback instead."""

    secret_name: ObjectName = Field(
        description="Secret in the shard's namespace with tls.crt, tls.key and ca.crt. The certificate needs "
                    "both serverAuth and clientAuth usages and, unless serverName is set, a DNS name matching "
                    "every pool pod's FQDN: *.<headless Service>.<namespace>.svc.cluster.local.")
    server_name: DnsName | None = Field(
        None, description="Name the clients expect in every server certificate instead of the address they "
                          "dial (multigateways register pod IPs, so gateway-to-gateway calls need it). Unset: "
                          "clients check the dialled hostname.")


class Security(SpecModel):
    """Authentication sources and network isolation of the shard's pods."""

    pod_network_cidrs: list[Cidr] = Field(
        list(DEFAULT_POD_NETWORK_CIDRS), alias="podNetworkCIDRs", min_length=1, max_length=16,
        description="Networks the default pg_hba (v0.1.0) accepts TCP logins from, for clients, "
                    "replication and pg_rewind, all with SCRAM-SHA-256: your cluster's pod network. "
                    "Default: the private ranges. Ignored when pgHbaTemplate is set.",
    )
    network_policy: NetworkPolicySettings = Field({}, validate_default=True, description="The shard's NetworkPolicy.")
    grpc_tls: GrpcTLS | None = Field(
        None, alias="grpcTLS",
        description="Mutual TLS on gRPC between multipooler, multiorch and multigateway (v0.1.0). Unset: "
                    "plaintext gRPC.")


# --- keys the engine owns ------------------------------------------------------------------------------
_OWNED_DOMAIN_RE = re.compile(rf"^([^/]*\.)?{re.escape(keys.OWNED_KEY_DOMAIN)}/")
_OWNED_DOMAIN_CEL = "'" + _OWNED_DOMAIN_RE.pattern.replace("\\", "\\\\") + "'"


def _owned(key: str, owned_keys: tuple[str, ...]) -> bool:
    return key in owned_keys or _OWNED_DOMAIN_RE.match(key) is not None


def owned_keys_rule(name: str, wire: str, what: str, owned_keys: tuple[str, ...] = ()) -> Rule:
    """User-supplied labels or annotations (`wire`, a map) may not use keys the engine sets: those
    under multigres.com (and its subdomains), and `owned_keys`."""
    listed = ", ".join(f"'{k}'" for k in owned_keys)
    bad_cel = f"k.matches({_OWNED_DOMAIN_CEL})" + (f" || k in [{listed}]" if owned_keys else "")
    owned = f"*{keys.OWNED_KEY_DOMAIN}/*" + (f", {', '.join(owned_keys)}" if owned_keys else "")

    def bad(model: Any) -> list[str]:
        values: Mapping[str, str] = wire_value(model, wire)
        return sorted(k for k in values if _owned(k, owned_keys))

    return Rule(
        name=name, cel=f"self.{wire}.all(k, !({bad_cel}))",
        message=f"{what} may not use keys multigres.pools sets ({owned})", field_path=f".{wire}",
        check=lambda m: not bad(m), detail=lambda m: ", ".join(bad(m)),
        detail_cel=f"self.{wire}.filter(k, {bad_cel})[0]",
    )


# --- postgresql.conf overrides ----------------------------------------------------------------------
# Settings a user may not override through `postgresConfig`: pgctld, multipooler and pgBackRest own
# them, and some would undo authentication (hba_file, password_encryption) or pull in other files
# (include*). `postgresConfigRef`, a whole template, is the user's own responsibility.
OWNED_POSTGRES_SETTINGS = (
    "archive_command", "archive_mode", "config_file", "data_directory", "hba_file", "ident_file",
    "include", "include_dir", "include_if_exists", "listen_addresses", "password_encryption", "port",
    "primary_conninfo", "primary_slot_name", "restore_command", "synchronous_standby_names",
    "unix_socket_directories",
)


def _bad_values(config: Mapping[str, str]) -> list[str]:
    return sorted(k for k, v in config.items() if has_control_character(v))


def postgres_config_rules(wire: str = "postgresConfig") -> tuple[Rule, ...]:
    """The two rules on the `postgresConfig` map: one line per value, no owned setting."""
    listed = ", ".join(f"'{k}'" for k in OWNED_POSTGRES_SETTINGS)
    return (
        Rule(
            name="postgres-config-single-line",
            cel=f"self.{wire}.all(k, !self.{wire}[k].matches({CONTROL_CEL}))",
            message="postgresConfig values must be one line without control characters (newline, tab, ...)",
            check=lambda s: not _bad_values(s.postgres_config), field_path=f".{wire}",
            detail=lambda s: ", ".join(_bad_values(s.postgres_config)),
            detail_cel=f"self.{wire}.filter(k, self.{wire}[k].matches({CONTROL_CEL}))[0]",
        ),
        Rule(
            name="postgres-config-owned-settings",
            cel=f"self.{wire}.all(k, !(k in [{listed}]))",
            message="postgresConfig may not set what pgctld, multipooler and pgBackRest own (listen_addresses, "
                    "port, hba_file, password_encryption, primary_conninfo, archive_command, include, ...)",
            check=lambda s: not (set(s.postgres_config) & set(OWNED_POSTGRES_SETTINGS)),
            field_path=f".{wire}",
            detail=lambda s: ", ".join(sorted(set(s.postgres_config) & set(OWNED_POSTGRES_SETTINGS))),
            detail_cel=f"self.{wire}.filter(k, k in [{listed}])[0]",
        ),
    )
