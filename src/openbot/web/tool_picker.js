// The bot editor's tool picker: every tool of the registry (GET /tools), grouped by source and
// server, with a "Use" and a "Needs approval" checkbox each. An MCP server's group also selects
// the whole server (mcp:<server>). Names the bot has that the registry does not know (a server
// no longer configured) are kept, listed under "Not in the registry".

import { h, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";

const SOURCES = { builtin: "Built-in", plugin: "Plugins and the tools directory", skill: "Skills", mcp: "MCP" };

function groupKey(tool) {
  return tool.source === "builtin" ? "builtin" : `${tool.source}:${tool.server || ""}`;
}

function groupTitle(tool) {
  const source = SOURCES[tool.source] || tool.source;
  return tool.server ? `${source}: ${tool.server}` : source;
}

function check(checked, label, disabled = false) {
  const input = h("input", { type: "checkbox", checked, disabled });
  input.setAttribute("aria-label", label);
  return input;
}

export class ToolPicker {
  /** tools, approvals: the bot's current ``tools`` and ``approval_tools``. */
  constructor(tools, approvals) {
    this.initial = { tools: new Set(tools), approvals: new Set(approvals) };
    this.rows = []; // {name, use, approval, granted_by, group}
    this.groups = []; // {selector, use, approval}
    this.servers = new Map(); // MCP server name → {name, status, error, tools}
    this.el = h("fieldset.tool-picker", { "aria-label": "Tools" }, h("legend", "Tools"), h("p.help", "Loading the tool registry…"));
    this.ready = this.load();
  }

  async load() {
    let tools;
    let servers = [];
    try {
      // The MCP servers' state is a help, not a need: the picker works without it.
      [tools, servers] = await Promise.all([api.tools(), api.mcpServers().catch(() => [])]);
    } catch (err) {
      this.el.querySelector("p.help").textContent = `The tool registry could not be loaded: ${describeError(err)}`;
      return;
    }
    const grouped = new Map();
    for (const tool of tools) {
      const key = groupKey(tool);
      if (!grouped.has(key)) grouped.set(key, { title: groupTitle(tool), tools: [], source: tool.source, server: tool.server });
      grouped.get(key).tools.push(tool);
    }
    const known = new Set(tools.map((t) => t.name));
    this.servers = new Map(servers.map((server) => [server.name, server]));
    this.el.replaceChildren(
      h("legend", "Tools"),
      h("p.help", "Use: the bot is built with the tool. Needs approval: each call waits for a person to approve, edit or reject it."),
      ...[...grouped.values()].map((g) => this.group(g)),
      ...[this.unknown(known), this.serverTable(servers)].filter(Boolean),
    );
  }

  /** Every configured MCP server with its state, and why it failed: a failed server has no tools
   * to list above, so this is where a person finds out. */
  serverTable(servers) {
    if (!servers.length) return null;
    return h(
      "table.tool-group.mcp-servers",
      h("caption", "MCP servers"),
      h("thead", h("tr", h("th", { scope: "col" }, "Server"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Tools"))),
      h(
        "tbody",
        servers.map((server) =>
          h(
            "tr",
            { dataset: { server: server.name } },
            h("th", { scope: "row" }, h("code", `mcp:${server.name}`), server.error ? h("p.help.mcp-error", server.error) : null),
            h("td", h("span.state-pill", { class: `state-${server.status}` }, server.status)),
            h("td", String(server.tools ?? 0)),
          ),
        ),
      ),
    );
  }

  group(g) {
    const id = nextId("tools");
    const selector = g.source === "mcp" && g.server ? `mcp:${g.server}` : null;
    let head = null;
    if (selector) {
      const use = check(this.initial.tools.has(selector), `Use every tool of ${selector}`);
      const approval = check(this.initial.approvals.has(selector), `Every tool of ${selector} needs approval`);
      this.groups.push({ selector, use, approval });
      head = h("tr.tool-group-all", h("th", { scope: "row" }, h("code", selector), " (all of the server's tools)"), h("td", use), h("td", approval));
      use.addEventListener("change", () => this.sync());
      approval.addEventListener("change", () => this.sync());
    }
    const rows = g.tools.map((tool) => this.row(tool, selector));
    this.sync();
    return h(
      "table.tool-group",
      { "aria-labelledby": id },
      h("caption", { id }, g.title),
      h("thead", h("tr", h("th", { scope: "col" }, "Tool"), h("th", { scope: "col" }, "Use"), h("th", { scope: "col" }, "Needs approval"))),
      h("tbody", head, rows),
    );
  }

  row(tool, selector) {
    const fixed = tool.granted_by !== "tools";
    // Every bot has the "always" ones; the file tools follow Workspace access, not this list.
    const byAccess = tool.granted_by === "workspace_access";
    const use = check(!byAccess && (fixed || this.initial.tools.has(tool.name)), `Use ${tool.name}`, fixed);
    const approval = check(this.initial.approvals.has(tool.name), `${tool.name} needs approval`);
    this.rows.push({ name: tool.name, use, approval, fixed, selector });
    const note = { always: "every bot has it", workspace_access: "by workspace access" }[tool.granted_by];
    const status = tool.status && tool.status !== "available" ? h("span.state-pill", { class: `state-${tool.status}` }, tool.status) : null;
    return h(
      "tr",
      h("th", { scope: "row", title: tool.description || "" }, h("code", tool.name), status ? [" ", status] : null, note ? h("span.help", ` (${note})`) : null),
      h("td", byAccess ? h("span.help", { title: "Set by Workspace access" }, "—") : use),
      h("td", approval),
    );
  }

  /** A server selected as a whole: its tools show as used (and approved) and cannot be unticked. */
  sync() {
    for (const row of this.rows) {
      const group = this.groups.find((g) => g.selector === row.selector);
      if (!group || row.fixed) continue;
      row.use.disabled = group.use.checked;
      if (group.use.checked) row.use.checked = true;
      row.approval.disabled = group.approval.checked;
      if (group.approval.checked) row.approval.checked = true;
    }
  }

  unknown(known) {
    const selectors = new Set(this.groups.map((g) => g.selector));
    const names = [...new Set([...this.initial.tools, ...this.initial.approvals])].filter((n) => !known.has(n) && !selectors.has(n));
    this.others = names.map((name) => ({
      name,
      use: check(this.initial.tools.has(name), `Use ${name}`),
      approval: check(this.initial.approvals.has(name), `${name} needs approval`),
    }));
    if (!this.others.length) return null;
    const why = (name) => {
      const server = name.startsWith("mcp:") ? this.servers.get(name.slice(4)) : null;
      return server ? h("span.help", ` (the server is ${server.status}${server.error ? `: ${server.error}` : ""})`) : null;
    };
    return h(
      "table.tool-group",
      h("caption", "Not in the registry (kept until unticked)"),
      h("tbody", this.others.map((o) => h("tr", h("th", { scope: "row" }, h("code", o.name), why(o.name)), h("td", o.use), h("td", o.approval)))),
    );
  }

  /** {tools, approval_tools} for the PATCH; the initial lists while the registry has not loaded. */
  value() {
    if (!this.rows.length) return { tools: [...this.initial.tools], approval_tools: [...this.initial.approvals] };
    const tools = [];
    const approvals = [];
    for (const g of this.groups) {
      if (g.use.checked) tools.push(g.selector);
      if (g.approval.checked) approvals.push(g.selector);
    }
    for (const r of this.rows) {
      const group = this.groups.find((g) => g.selector === r.selector);
      if (!r.fixed && r.use.checked && !(group && group.use.checked)) tools.push(r.name);
      if (r.approval.checked && !(group && group.approval.checked)) approvals.push(r.name);
    }
    for (const o of this.others || []) {
      if (o.use.checked) tools.push(o.name);
      if (o.approval.checked) approvals.push(o.name);
    }
    return { tools, approval_tools: approvals };
  }
}
