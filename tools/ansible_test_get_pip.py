"""Stand-in for the get-pip script ansible-test downloads from ci-files.testing.ansible.com (not
reachable from our machines) to bootstrap pip in its sanity venvs: ensurepip, then pip installs
what ansible-test asks for (its pinned pip) from PyPI. Install it as
~/.ansible/test/cache/get_pip_<version with underscores>.py (docs/development.md, "ansible-test sanity")."""

import ensurepip
import os
import subprocess
import sys

# ansible-test runs pip with a reduced environment; name the CA bundle explicitly when there is one.
bundle = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
cert = ["--cert", bundle] if os.path.isfile(bundle) else []
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
ensurepip.bootstrap()
subprocess.check_call([sys.executable, "-m", "pip", "install", *cert, *args])
