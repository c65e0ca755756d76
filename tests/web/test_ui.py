"""The web UI, driven in headless Chromium against a real ``openbot serve`` (scripted bots)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPLY = "Hello from the engineer, streaming word by word into the browser tab."


def thread_with(api: Client, title: str, bot: str = "engineer") -> str:
    return api.create_thread(title=title, participants=["you", bot], default_bot=bot)["id"]


def open_app(page: Page, server: LiveServer, route: str = "/inbox") -> None:
    page.goto(f"{server.url}/#{route}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")


def wait_run(api: Client, thread_id: str, status: str) -> dict[str, Any]:
    return wait_until(
        lambda: next((r for r in api.runs(thread_id=thread_id) if r["status"] == status), None),
        message=f"a {status} run in {thread_id}",
    )


RECORD_STREAM = """() => {
  window.__streamed = [];
  new MutationObserver(() => {
    for (const el of document.querySelectorAll('.run-stream')) {
      if (!el.hidden && el.textContent) window.__streamed.push(el.textContent);
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_create_thread_send_message_and_see_the_reply_stream_in(
    page: Page, server: LiveServer, api: Client
) -> None:
    api.script_bot("engineer", [{"match": "(?i)hello", "reply": REPLY}], delay_ms=300)
    open_app(page, server, "/threads")

    page.get_by_role("button", name="New thread").click()
    dialog = page.get_by_role("dialog", name="New thread")
    dialog.get_by_label("Title").fill("Browser hello")
    dialog.get_by_label("Default bot").select_option("engineer")
    dialog.get_by_role("button", name="Create thread").click()
    expect(page).to_have_url(re.compile(r"#/t/thr_"))
    expect(page.get_by_role("heading", name="Browser hello")).to_be_visible()
    page.evaluate(RECORD_STREAM)

    composer = page.get_by_role("combobox", name="Message")
    composer.type("hello @eng")
    option = page.get_by_role("option", name=re.compile("@engineer"))
    expect(option).to_be_visible()
    composer.press("Enter")  # picks the suggestion
    expect(composer).to_have_value("hello @engineer ")
    expect(page.locator(".composer-hint")).to_contain_text("To @engineer")
    composer.press("Shift+Enter")
    composer.type("how are you?")
    expect(composer).to_have_value("hello @engineer \nhow are you?")
    composer.press("Enter")
    expect(composer).to_have_value("")

    mine = page.locator("article.msg[data-sender='you']")
    expect(mine).to_contain_text("how are you?")
    reply = page.locator("article.msg[data-sender='engineer']")
    expect(reply).to_contain_text(REPLY)
    expect(page.locator(".run[data-status='completed']")).to_have_count(1)
    streamed = page.evaluate("window.__streamed")
    assert streamed, "no token deltas were rendered"
    partial = [s for s in streamed if len(s) < len(REPLY)]
    assert partial and all(REPLY.startswith(s.strip()) for s in partial), streamed[:5]


def test_the_new_thread_dialog_takes_a_title_as_long_as_the_api_does(page: Page, server: LiveServer) -> None:
    """The API takes titles up to 500 characters; the dialog used to cut them at 200."""
    open_app(page, server, "/threads")
    page.get_by_role("button", name="New thread").click()
    dialog = page.get_by_role("dialog", name="New thread")
    title = "Long title " + "x" * 489
    dialog.get_by_label("Title").fill(title + "beyond the limit")
    expect(dialog.get_by_label("Title")).to_have_value(title)
    dialog.get_by_role("button", name="Create thread").click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()


def test_answer_a_question_card_and_see_the_run_finish(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot(
        "engineer",
        [
            {
                "match": "(?i)ship",
                "reply": "Shipping because you said: {tool_result}",
                "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it?"}}],
            }
        ],
    )
    thread = thread_with(api, "Question card")
    api.post_message(thread, "please ship the release")
    open_app(page, server, f"/t/{thread}")

    card = page.get_by_role("form", name="Question from @engineer")
    expect(card).to_contain_text("Ship it?")
    expect(page.locator(".run[data-status='waiting_human']")).to_have_count(1)
    card.get_by_label("Your answer").fill("yes, go ahead")
    card.get_by_role("button", name="Answer").click()

    expect(page.locator("article.msg[data-sender='engineer']")).to_contain_text(
        "Shipping because you said: yes, go ahead"
    )
    expect(page.locator(".run[data-status='completed']")).to_have_count(1)
    expect(page.locator(".run[data-status='waiting_human']")).to_have_count(0)


def test_needs_action_lists_open_questions_and_answers_in_place(
    page: Page, server: LiveServer, api: Client
) -> None:
    api.script_bot(
        "reviewer",
        [
            {
                "match": "(?i)review",
                "reply": "Reviewed: {tool_result}",
                "tool_calls": [{"name": "ask_human", "args": {"question": "Which branch should I review?"}}],
            }
        ],
    )
    thread = thread_with(api, "Needs action thread", bot="reviewer")
    api.post_message(thread, "@reviewer review please")
    run = wait_run(api, thread, "waiting_human")
    open_app(page, server, "/inbox/action")

    expect(page.get_by_role("tab", name=re.compile("Needs action"))).to_have_attribute(
        "aria-selected", "true"
    )
    item = page.locator(f".action-item[data-run-id='{run['id']}']")
    expect(item).to_contain_text("Which branch should I review?")
    expect(item).to_contain_text("Needs action thread")
    item.get_by_label("Your answer").fill("main")
    item.get_by_label("Your answer").press("Enter")
    wait_run(api, thread, "completed")
    expect(item).to_have_count(0)

    page.get_by_role("tab", name=re.compile("^All")).click()
    expect(page.locator(f".thread-row[data-thread-id='{thread}']")).to_be_visible()


def planning_bot(api: Client, todo: str, **rule: str) -> None:
    """@engineer answers "plan" with a todo_write that needs approval, then its result."""
    todos = {"todos": [{"content": todo, "status": "pending"}]}
    call = {"name": "todo_write", "args": todos}
    plan: dict[str, Any] = {
        "match": "(?i)plan",
        "reply": "Plan step done: {tool_result}",
        "tool_calls": [call],
    }
    api.script_bot("engineer", [{**plan, **rule}], approval_tools=["todo_write"])


def open_thread_and_post(
    page: Page, server: LiveServer, api: Client, title: str, text: str
) -> tuple[str, Any]:
    """A new thread with @engineer, opened in the page, and ``text`` posted from its composer."""
    thread = thread_with(api, title)
    open_app(page, server, f"/t/{thread}")
    composer = page.get_by_role("combobox", name="Message")
    composer.fill(text)
    composer.press("Enter")
    return thread, composer


def test_approve_edit_and_reject_approval_cards(page: Page, server: LiveServer, api: Client) -> None:
    planning_bot(api, "write tests")
    thread, composer = open_thread_and_post(page, server, api, "Approvals", "plan one")  # approve
    card = page.get_by_role("form", name="Approval requested by @engineer")
    expect(card).to_contain_text("todo_write")
    expect(card.locator("textarea")).to_have_value(re.compile("write tests"))
    card.get_by_role("button", name="Send decision").click()
    expect(page.locator("article.msg[data-sender='engineer']")).to_have_count(1)
    wait_until(
        lambda: all(r["status"] == "completed" for r in api.runs(thread_id=thread)),
        message="approved run done",
    )

    # edit the arguments
    composer.fill("plan two")
    composer.press("Enter")
    expect(page.locator("article.msg[data-sender='you']")).to_have_count(2)  # the post landed
    card = page.get_by_role("form", name="Approval requested by @engineer")
    expect(card).to_be_visible(timeout=30_000)
    card.get_by_role("radio", name="Edit").check()
    args = card.get_by_label(re.compile("Arguments"))
    args.fill('{"todos": [{"content": "edited by a human", "status": "pending"}]}')
    card.get_by_role("button", name="Send decision").click()
    expect(page.locator("article.msg[data-sender='engineer']")).to_have_count(2)

    # reject with a reason
    composer.fill("plan three")
    composer.press("Enter")
    expect(page.locator("article.msg[data-sender='you']")).to_have_count(3)  # the post landed
    card = page.get_by_role("form", name="Approval requested by @engineer")
    expect(card).to_be_visible(timeout=30_000)
    card.get_by_role("radio", name="Reject").check()
    card.get_by_label("Reason for rejecting").fill("not this sprint")
    card.get_by_role("button", name="Send decision").click()
    expect(page.locator("article.msg[data-sender='engineer']")).to_have_count(3)
    runs = wait_until(
        lambda: (
            (rs := api.runs(thread_id=thread))
            and len(rs) == 3
            and all(r["status"] == "completed" for r in rs)
            and rs
        ),
        message="three finished runs",
    )
    details = [api.run(r["id"]) for r in runs]
    results = [
        " ".join(str(e.get("payload")) for e in d["events"] if e["type"] == "tool_result") for d in details
    ]
    assert "edited by a human" in results[1]
    assert "not this sprint" in results[2]
    expect(page.locator(".interrupt")).to_have_count(0)


def test_cancel_a_slow_run(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot("qa", [{"match": "(?i)slow", "reply": "finally done"}], delay_ms=5000)
    thread = thread_with(api, "Slow run", bot="qa")
    open_app(page, server, f"/t/{thread}")
    composer = page.get_by_role("combobox", name="Message")
    composer.fill("@qa slow please")
    composer.press("Enter")
    running = page.locator(".run[data-status='running']")
    expect(running).to_have_count(1)
    elapsed = running.locator(".run-elapsed")
    first = elapsed.inner_text()
    expect(elapsed).not_to_have_text(first)  # the time so far moves while it works
    running.get_by_role("button", name="Cancel run by @qa").click()
    expect(page.locator(".run[data-status='cancelled']")).to_have_count(1)
    expect(page.locator(".run-elapsed")).to_have_count(0)  # a finished run's time stands still
    assert wait_run(api, thread, "cancelled")
    expect(page.locator("article.msg[data-sender='qa']")).to_have_count(0)
    api.script_bot("qa", [])


def test_threads_search_filters_by_title(page: Page, server: LiveServer, api: Client) -> None:
    thread_with(api, "Quarterly zebra report")
    thread_with(api, "Unrelated plumbing")
    open_app(page, server, "/threads")
    page.get_by_label("Search threads by title").fill("zebra")
    expect(page.locator(".thread-row")).to_have_count(1)
    expect(page.locator(".thread-row")).to_contain_text("Quarterly zebra report")
    page.get_by_label("Search threads by title").fill("")
    expect(page.locator(".thread-row", has_text="Unrelated plumbing")).to_be_visible()


def test_unread_view_and_mark_read_on_open(page: Page, server: LiveServer, api: Client) -> None:
    thread = thread_with(api, "Unread by you")
    api.post_message(thread, "status update for the humans", sender="engineer")
    open_app(page, server, "/inbox/unread")
    row = page.locator(f".thread-row[data-thread-id='{thread}']")
    expect(row).to_have_class(re.compile("is-unread"))
    row.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Unread by you")).to_be_visible()
    wait_until(lambda: api.thread(thread).get("unread") == 0, message="thread acked")
    page.get_by_role("link", name=re.compile("^Inbox")).click()
    page.get_by_role("tab", name=re.compile("Unread")).click()
    expect(page.locator(f".thread-row[data-thread-id='{thread}']")).to_have_count(0)


def test_bot_editor_saves_settings_and_shows_validation_errors(
    page: Page, server: LiveServer, api: Client, console
) -> None:  # type: ignore[no-untyped-def]
    console.allow("status of 422")  # Chromium logs the refused PATCH itself
    open_app(page, server, "/bots/reviewer")
    editor = page.get_by_role("form", name="@reviewer")
    editor.get_by_label("Description").fill("Reads every diff twice.")
    editor.get_by_label("Max parallel threads").fill("2")
    editor.get_by_role("button", name="Add rule").click()
    editor.get_by_label("Match (regex)").last.fill("(?i)lgtm")
    editor.get_by_label("Reply").last.fill("Looks good to me too.")
    editor.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Saved @reviewer")).to_be_visible()
    bot = api.bot("reviewer")
    assert bot["description"] == "Reads every diff twice."
    assert bot["max_parallel_threads"] == 2
    assert bot["model_settings"]["script"][-1] == {"match": "(?i)lgtm", "reply": "Looks good to me too."}

    editor.get_by_label("Match (regex)").last.fill("(unclosed")
    editor.get_by_role("button", name="Save").click()
    expect(editor.get_by_role("alert")).to_contain_text("Not saved")
    assert api.bot("reviewer")["model_settings"]["script"][-1]["match"] == "(?i)lgtm"


def test_bot_editor_shows_a_rules_say_and_drops_it_with_the_tool_calls(
    page: Page, server: LiveServer, api: Client
) -> None:
    planning_bot(api, "a", say="Working on it.")
    open_app(page, server, "/bots/engineer")
    editor = page.get_by_role("form", name="@engineer")
    said = editor.get_by_label("Said with the tool calls (optional)")
    expect(said).to_have_value("Working on it.")
    said.fill("On it.")
    editor.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Saved @engineer")).to_be_visible()
    assert api.bot("engineer")["model_settings"]["script"][0]["say"] == "On it."

    editor.get_by_label("Tool calls (JSON, optional)").fill("")  # no calls: nothing to say beside them
    editor.get_by_role("button", name="Save").click()  # the same status line: wait on the bot itself
    rule = wait_until(
        lambda: (r := api.bot("engineer")["model_settings"]["script"][0]) and "tool_calls" not in r and r,
        message="saved without tool calls",
    )
    assert "say" not in rule  # saved at all: a `say` left behind would be a 422


def test_bots_list_shows_live_state(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot("qa", [{"match": "(?i)check", "reply": "checked"}], delay_ms=2500)
    thread = thread_with(api, "Live state", bot="qa")
    open_app(page, server, "/bots")
    card = page.locator(".bot-card[data-handle='qa']")
    expect(card).to_contain_text("idle")
    api.post_message(thread, "@qa check this")
    expect(card).to_contain_text("running in Live state")
    expect(card).to_contain_text("idle", timeout=20_000)
    api.script_bot("qa", [])


def test_activity_filters_and_live_tail(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot("engineer", [])
    thread = thread_with(api, "Activity thread")
    open_app(page, server, "/activity")
    expect(page.locator(".activity-table tbody tr").first).to_be_visible()
    page.get_by_label("Thread", exact=True).select_option(thread)
    expect(page).to_have_url(re.compile(f"thread_id={thread}"))
    cells = page.locator(".activity-table tbody tr[data-id] td:nth-child(6)")
    wait_until(
        lambda: (t := cells.all_inner_texts()) and set(t) == {"Activity thread"}, message="filtered rows"
    )
    before = cells.count()
    api.post_message(thread, "@engineer anything new?")
    wait_until(lambda: cells.count() > before, message="live rows")
    assert set(cells.all_inner_texts()) == {"Activity thread"}
    page.get_by_label("Level").select_option("error")
    expect(page.locator(".activity-table tbody td.empty")).to_be_visible()


def test_phone_width_dark_theme_and_keyboard(browser, server: LiveServer, api: Client, console) -> None:  # type: ignore[no-untyped-def]
    thread = thread_with(api, "On a phone")
    api.post_message(
        thread, "a message long enough to wrap on a narrow phone screen, " * 3, sender="engineer"
    )
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="light")
    page = context.new_page()
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    try:
        open_app(page, server, f"/t/{thread}")
        expect(page.locator("article.msg")).to_have_count(1)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"horizontal overflow of {overflow}px at phone width"
        expect(page.get_by_role("combobox", name="Message")).to_be_in_viewport(ratio=1)
        nav = page.get_by_role("navigation", name="Main")
        for name in ("Inbox", "Threads", "Bots", "Activity", "Automations", "Drafts"):  # none scrolled away
            expect(nav.get_by_role("link", name=re.compile(f"^{name}"))).to_be_in_viewport(ratio=1)

        bg_light = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.get_by_role("button", name="Switch to dark theme").click()
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") != bg_light
        page.reload()
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")

        # keyboard: on a page that does not focus the composer, the skip link is the first stop
        open_app(page, server, "/inbox")
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    finally:
        context.close()
    assert console.unexpected() == []


def test_every_control_has_an_accessible_name(page: Page, server: LiveServer, api: Client) -> None:
    thread = thread_with(api, "Labels")
    routes = ["/inbox", "/threads", f"/t/{thread}", "/bots/engineer", "/activity"]
    for route in routes:
        open_app(page, server, route)
        page.wait_for_load_state("networkidle")
        unnamed = page.evaluate("""() => [
            ...document.querySelectorAll('button, input, select, textarea, a[href]')]
            .filter(el => el.offsetParent !== null && el.type !== 'hidden')
            .filter(el => {
              const labelled = el.labels && el.labels.length;
              const aria = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
              const text = (el.textContent || '').trim();
              return !(labelled || aria || text || el.title);
            }).map(el => el.outerHTML.slice(0, 120))""")
        assert unnamed == [], f"{route}: {unnamed}"


def test_a_paused_run_keeps_what_it_said_without_a_caret_and_a_misfit_edit_reads_as_a_sentence(
    page: Page, server: LiveServer, api: Client, console: Any
) -> None:
    console.allow("status of 422")  # the browser's own log of the refused decision
    planning_bot(api, "a", say="Working on it.")
    thread, _ = open_thread_and_post(page, server, api, "Paused caret", "plan it")
    card = page.get_by_role("form", name="Approval requested by @engineer")
    expect(card).to_be_visible()
    run = page.locator("section.run[data-status='waiting_human']")
    expect(run.locator(".run-stream")).to_contain_text("Working on it.")
    expect(run.locator(".run-stream .caret")).to_be_hidden()  # it waits for you: not typing
    # Args the tool refuses: 422, said in words (no JSON of the details).
    card.get_by_role("radio", name="Edit").check()
    card.get_by_label(re.compile("Arguments")).fill('{"todos": "a"}')
    card.get_by_role("button", name="Send decision").click()
    error = card.locator(".form-error")
    expect(error).to_contain_text("Action 1 (todo_write): the edited args do not fit todo_write's parameters")
    expect(error).not_to_contain_text("{")
    expect(error).not_to_contain_text("decision 0")  # the card counts actions from 1
    args = card.get_by_label(re.compile("Arguments"))
    args.fill("{not json")
    card.get_by_role("button", name="Send decision").click()
    expect(error).to_contain_text("Action 1 (todo_write): the arguments are not valid JSON")
    # Approve after an edit runs the original arguments, so the box shows them; Edit brings the edit back.
    card.get_by_role("radio", name="Approve").check()
    expect(args).to_have_value(re.compile('"content": "a"'))
    expect(args).to_have_js_property("readOnly", True)
    card.get_by_role("radio", name="Edit").check()
    expect(args).to_have_value("{not json")
    assert wait_run(api, thread, "waiting_human")["status"] == "waiting_human"


def test_the_thread_header_shows_the_last_activity_as_messages_arrive(
    page: Page, server: LiveServer, api: Client
) -> None:
    thread = api.create_thread(title="Header activity", participants=["you"])["id"]

    def newest(count: int) -> str:  # each post here is answered by the routing bot
        wait_until(lambda: len(api.messages(thread)) == count, message=f"{count} messages")
        return str(api.messages(thread)[-1]["created_at"])

    api.post_message(thread, "first words")
    first = newest(2)
    open_app(page, server, f"/t/{thread}")
    stamp = page.locator(".thread-meta time")
    expect(stamp).to_have_attribute("datetime", first)
    api.post_message(thread, "later words")  # posted elsewhere: seen live
    expect(stamp).to_have_attribute("datetime", newest(4))
