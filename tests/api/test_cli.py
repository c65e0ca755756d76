"""The ``openbot`` command line against a real server."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner, Result

from conftest import Team
from openbot.cli import app
from openbot.thread_refs import short_id


async def invoke(*args: str, columns: int | None = None) -> Result:
    env = {"COLUMNS": str(columns)} if columns else None
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)


async def test_post_command_posts_and_reports_who_woke(server: str, team: Team) -> None:
    thread = await team.thread()
    result = await invoke("post", thread, "@engineer from the terminal", "--server", server)
    assert result.exit_code == 0, result.output
    assert "woke @engineer" in result.output
    await team.idle()
    assert (await team.messages(thread))[0]["content"] == "@engineer from the terminal"
    at = await invoke("post", thread, "with an at sign", "--from", "@you", "--server", server)
    assert at.exit_code == 0, at.output  # `@you` as people write it
    bad = await invoke("post", "thr_missing", "hi", "--server", server)
    assert bad.exit_code == 1 and bad.stderr == "openbot: no thread matches 'thr_missing' " + (
        "(give a number from `openbot threads`, an id, or title words)\n"
    )


async def test_post_takes_the_thread_references_of_switch(server: str, team: Team) -> None:
    """A number from `openbot threads`, an id's start or the end the tables show, or the title."""
    release = await team.thread("Ship the release")
    await team.thread("Release notes")
    newest = await team.thread("Flaky test")
    listing = (await invoke("threads", "--server", server)).stdout
    number = next(line.split()[0] for line in listing.splitlines() if "Ship the release" in line)
    refs = {
        number: release,
        release[:-3]: release,
        short_id(release): release,
        short_id(release)[:5]: release,  # the start of the piece the table shows
        "ship the RELEASE": release,
        "flaky": newest,
    }
    for ref, thread in refs.items():
        result = await invoke("post", ref, f"via {ref}", "--server", server)
        assert result.exit_code == 0, (ref, result.output)
        assert f"via {ref}" in [m["content"] for m in await team.messages(thread)]
    ambiguous = await invoke("post", "release", "hi", "--server", server)
    assert ambiguous.exit_code == 1
    assert ambiguous.stderr.startswith("openbot: 'release' matches 2 threads (")


async def test_tables_fit_80_columns(server: str, team: Team) -> None:
    """Short ids, clipped titles: each thread and bot on one line, no line over 80 columns."""
    long_title = "Prepare the quarterly release of every service and write the migration guide"
    threads = [await team.thread(long_title, participants=["you", "engineer", "reviewer", "qa"])]
    threads.append(await team.thread("Short one"))
    await team.script(
        "engineer", [{"match": ".", "reply": "ok"}], approval_tools=["todo_write", "shell", "http_fetch"]
    )
    await team.post(threads[0], "@engineer and a summary long enough to need more than one line " * 2)
    await team.idle()
    out = ""
    for command in ("threads", "bots", "activity"):
        out += (await invoke(command, "--server", server, columns=80)).stdout
    too_long = [line for line in out.splitlines() if len(line) > 80]
    assert not too_long, "\n".join(too_long)
    lines = out.splitlines()
    for thread in threads:
        rows = [line for line in lines if short_id(thread) in line]
        assert len(rows) == 1, rows
    assert any(line.lstrip().startswith("1 ") and "Prepare the" in line for line in lines)
    for handle in ("@chief_of_staff", "@engineer", "@reviewer", "@qa"):
        assert sum(line.lstrip().startswith(handle + " ") for line in lines) == 1, handle


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "OPENBOT_API_TOKEN" in result.output


async def test_post_names_a_mention_of_nobody(server: str, team: Team) -> None:
    thread = await team.thread("Typos")
    result = await invoke("post", thread, "@enginer please look", "--server", server)
    assert result.exit_code == 0, result.output
    assert result.stderr == "@enginer is not a member of this team — did you mean @engineer?\n"


async def test_token_commands_issue_a_token_that_posts_as_its_actor_and_revoke_it(
    server: str, team: Team, client: object
) -> None:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    assert (await client.post("/api/v1/actors", json={"handle": "alice", "kind": "human"})).status_code == 201
    issued = await invoke("token", "issue", "alice", "--server", server)
    assert issued.exit_code == 0, issued.output
    token = issued.stdout.strip()
    assert token.startswith("obt_") and "shown once" in issued.stderr
    thread = await team.thread(participants=["alice"])  # an actor token posts in its threads only
    posted = await invoke("post", thread, "hello as alice", "--server", server, "--token", token)
    assert posted.exit_code == 0, posted.output
    first = (await team.messages(thread))[0]
    assert (first["content"], first["sender"]["handle"]) == ("hello as alice", "alice")
    refused = await invoke("post", thread, "as you", "--from", "you", "--server", server, "--token", token)
    assert refused.exit_code == 1 and "403 forbidden" in refused.stderr
    # A handle is one path segment: "you/../alice" names nobody, it is not a way to reach @alice.
    sneaky = await invoke("token", "revoke", "you/../alice", "--server", server)
    assert sneaky.exit_code == 1 and "404 not_found" in sneaky.stderr, sneaky.output
    still = await invoke("post", thread, "still alice", "--server", server, "--token", token)
    assert still.exit_code == 0, still.output
    revoked = await invoke("token", "revoke", "@alice", "--server", server)  # `@` as people write it
    assert revoked.exit_code == 0, revoked.output
    assert revoked.stdout == "revoked every token of @alice\n"
    after = await invoke("post", thread, "after revoking", "--server", server, "--token", token)
    assert after.exit_code == 1 and "401 unauthorized" in after.stderr


async def test_the_banners_api_address_works_as_server(server: str, team: Team) -> None:
    """``openbot serve`` prints both addresses; either one works as ``--server``."""
    await team.thread("Reachable")
    listed = await invoke("threads", "--server", f"{server}/api/v1/")
    assert listed.exit_code == 0, listed.output
    assert "Reachable" in listed.stdout


async def test_options_that_conflict_or_need_a_partner_are_refused() -> None:
    """Refused before anything is sent (no server is needed to hear it)."""
    cases = {
        ("chat", "--thread", "1", "--new", "X"): "give --thread or --new, not both",
        ("chat", "--new", " "): "--new needs a title",
        ("automations", "--run", "ab12", "--history", "ab12"): "give --run or --history, not both",
        ("drafts", "--send", "ab12", "--reject", "cd34"): "give --send or --reject, not both",
        ("drafts", "--content", "edited"): "--content goes with --send",
        ("drafts", "--reason", "no"): "--reason goes with --reject",
    }
    for args, message in cases.items():
        result = await invoke(*args, "--server", "http://127.0.0.1:9")
        assert (result.exit_code, result.stderr) == (1, f"openbot: {message}\n"), args
