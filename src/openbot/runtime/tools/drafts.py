"""``save_draft``: stage an outgoing message for a person to send or reject (runtime.drafts)."""

from __future__ import annotations

from langchain.tools import ToolRuntime
from langchain_core.tools import ToolException, tool
from pydantic import BaseModel, Field

from openbot.core.errors import InvalidArgument
from openbot.runtime import drafts
from openbot.runtime.tools.context import RunContext
from openbot.store.models import Actor


class DraftTarget(BaseModel):
    thread_id: str | None = Field(None, description="the thread to post in (default: this thread)")
    actor: str | None = Field(None, description="the handle to address it to, e.g. an external contact")


@tool
async def save_draft(
    title: str, content: str, runtime: ToolRuntime[RunContext], target: DraftTarget | None = None
) -> str:
    """Stage an outgoing message (to a thread, or to an actor such as an external contact) for a
    person to review. It is NOT sent: a person sends it (maybe edited) or rejects it with a reason
    you will see in this thread. Use it for anything that leaves the team."""
    env = runtime.context.env
    goal = target if isinstance(target, DraftTarget) else DraftTarget.model_validate(target or {})
    try:
        async with env.db.transaction() as s:
            bot = await s.get(Actor, env.bot_id)
            assert bot is not None
            draft = await drafts.save(
                s,
                bot,
                thread_id=env.thread_id,
                run_id=env.run_id,
                title=title,
                content=content,
                target_thread_id=goal.thread_id,
                target_actor=goal.actor,
            )
    except InvalidArgument as exc:
        raise ToolException(f"the draft was not saved: {exc.message}") from exc
    return (
        f"Draft {draft.id} ({draft.title!r}) is saved and waits for a person: they will send it or "
        "reject it. It has not been sent; do not send it another way."
    )


save_draft.handle_tool_error = True
