"""Who is asking: a Bearer token, or the session cookie a login set.

A browser cannot put a header on a WebSocket, so it logs in once (``/login`` with the
token) and gets an HttpOnly, SameSite=Strict cookie holding a random session id: the
token itself is never sent back to the browser. Sessions live in memory (a restart
means logging in again) and are pure: the caller passes the time.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum

from edgevoice.device.console.tokens import ConsoleTokens
from edgevoice.device.mqtt.ratelimit import TokenBucket

COOKIE = "edgevoice_console"
MAX_SESSIONS = 256


class Role(StrEnum):
    FULL = "full"  # every page, events, commands, the operator desk
    CAPTIONS = "captions"  # /captions and its events only; no commands


@dataclass(frozen=True, slots=True)
class Session:
    role: Role
    expires: float


class Sessions:
    """Session id -> role, with expiry; the oldest is dropped past :data:`MAX_SESSIONS`."""

    def __init__(self, lifetime_s: float) -> None:
        self._lifetime_s = lifetime_s
        self._sessions: dict[str, Session] = {}

    def open(self, role: Role, now: float) -> str:
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = Session(role, now + self._lifetime_s)
        return session_id

    def role(self, session_id: str, now: float) -> Role | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.expires <= now:
            del self._sessions[session_id]
            return None
        return session.role

    def close(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)


class Authenticator:
    """Turns a request's credentials into a :class:`Role` (or None)."""

    def __init__(self, tokens: ConsoleTokens, sessions: Sessions, now: float) -> None:
        self._tokens = tokens
        self.sessions = sessions
        # Failed logins: 5 back to back, then one every 2 s (guessing a 256-bit token is
        # hopeless anyway; this keeps a scanner from spinning the CPU).
        self._failures = TokenBucket(0.5, 5, now)
        self._blocked_until = 0.0

    def from_headers(self, authorization: str | None, cookie: str | None, now: float) -> Role | None:
        if authorization:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer":
                return self.from_token(value)
            return None
        if cookie:
            return self.sessions.role(cookie, now)
        return None

    def from_token(self, token: str) -> Role | None:
        role = self._tokens.role_of(token)
        return Role(role) if role is not None else None

    def login(self, token: str, now: float) -> Role | None:
        """The role ``token`` opens; raises :class:`LoginThrottled` after too many failures
        (then even the right token waits, so guessing gains nothing)."""
        if now < self._blocked_until:
            raise LoginThrottled(self._blocked_until - now)
        role = self.from_token(token)
        if role is None and not self._failures.take(now):
            self._blocked_until = now + self._failures.retry_after() + 1.0
        return role


class LoginThrottled(Exception):
    """Too many failed logins; ``retry_after_s`` says when to try again."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"too many failed logins; try again in {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


def allows(role: Role, need: Role) -> bool:
    """Full access opens everything; the captions token opens only captions."""
    return role is Role.FULL or role is need
