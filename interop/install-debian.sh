#!/usr/bin/env bash
# Installs the Debian-packaged servers of courier's interop suite
# (crates/courier/tests/it/interop.rs): nginx, Apache httpd (mod_http2, mod_ssl,
# mod_proxy ship with the apache2 package), h2o, Caddy, lighttpd (HTTP/2
# built in) and HAProxy. The suite writes its own config for each one into a
# temp dir and starts it itself, so the system services are neither
# configured nor needed: they are stopped and disabled when the init system
# allows it. Safe to run again. Needs root (or sudo).
set -euo pipefail

PACKAGES=(nginx apache2 h2o caddy lighttpd haproxy)
# The proxies crates/courier/tests/it/proxy.rs goes through (HTTP forward and
# CONNECT; SOCKS5).
PACKAGES+=(tinyproxy microsocks)
# lighttpd's TLS and compression are modules of their own, only recommended
# by its package (and recommends are not installed below).
MODULES=(lighttpd-mod-openssl lighttpd-mod-deflate)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

echo "== interop: Debian packages: ${PACKAGES[*]}"
missing=()
for p in "${PACKAGES[@]}"; do
    command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
for p in "${MODULES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    # No package may start its system service (port 80, 443...) while it is
    # installed: policy-rc.d says no for the length of the install.
    added_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
        $SUDO chmod +x /usr/sbin/policy-rc.d
        added_policy=1
    fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    if [ -n "$added_policy" ]; then
        $SUDO rm -f /usr/sbin/policy-rc.d
    fi
else
    echo "all installed"
fi

if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    for unit in nginx apache2 h2o caddy lighttpd haproxy tinyproxy; do
        $SUDO systemctl disable --now "$unit" >/dev/null 2>&1 || true
    done
fi

echo "== interop: versions"
nginx -v 2>&1
apache2 -v | sed -n 1p
h2o --version | sed -n 1p
echo "caddy $(caddy version)"
lighttpd -v | sed -n 1p
haproxy -v | sed -n 1p
# The modules the suite's Apache config loads.
for m in mpm_event http2 ssl proxy proxy_http deflate reqtimeout socache_shmcb; do
    [ -f "/usr/lib/apache2/modules/mod_$m.so" ] || { echo "missing mod_$m" >&2; exit 1; }
done
for m in openssl deflate; do
    [ -f "/usr/lib/lighttpd/mod_$m.so" ] || { echo "missing lighttpd mod_$m" >&2; exit 1; }
done
echo "== interop: Debian servers ready"
