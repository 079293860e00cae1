"""The end of a Responses API response: close parts, report usage, then the finish or
the error, for every terminal status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.model.events import Finish, StreamError
from thoughtline.providers.openai_responses._errors import failed_response
from thoughtline.providers.openai_responses._items import ResponseItems
from thoughtline.providers.openai_responses._parts import Events, as_str
from thoughtline.providers.openai_responses._usage import incomplete_finish, usage_event


class ResponseEnding(ResponseItems):
    """Terminal mapping on top of item completion."""

    def completed(self, response: Mapping[str, Any]) -> Events:
        """The response finished normally: close parts, report usage and the finish."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        status = as_str(response.get("status")) or "completed"
        if self._refusal:
            out.append(Finish(reason="refusal", raw_reason="refusal"))
        elif self._tool_calls:
            out.append(Finish(reason="tool_calls", raw_reason=status))
        else:
            out.append(Finish(reason="stop", raw_reason=status))
        self.finished = True
        return out

    def incomplete(self, response: Mapping[str, Any]) -> Events:
        """Stopped early (output budget, content filter): still a finish, not an error."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        out.append(incomplete_finish(response))
        self.finished = True
        return out

    def failed(self, response: Mapping[str, Any]) -> Events:
        """The provider failed the response: the error is the last event, and parts
        still open stay open (incomplete)."""
        out = self.started(response)
        self._append_usage(out, response)
        out.append(failed_response(response))
        self.finished = True
        return out

    def ended(self, response: Mapping[str, Any], finish: Finish) -> Events:
        """A terminal status without its own event type (``cancelled``)."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        out.append(finish)
        self.finished = True
        return out

    def pending(self, response: Mapping[str, Any], status: str) -> Events:
        """A body whose response is not done yet (``queued``, ``in_progress``)."""
        out = self.started(response)
        out.append(
            StreamError(
                code="PROVIDER_INCOMPLETE",
                message=f"The OpenAI Responses API returned a response that is still {status}; "
                "thoughtline does not poll background responses.",
                retryable=False,
                provider_error_type=status,
            )
        )
        self.finished = True
        return out

    @staticmethod
    def _append_usage(out: Events, response: Mapping[str, Any]) -> None:
        usage = usage_event(response.get("usage"))
        if usage is not None:
            out.append(usage)
