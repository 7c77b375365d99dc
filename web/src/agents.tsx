// Agents: your agents listed, and an editor with pickers in place of names to guess: the model
// from the catalog (context window and prices beside each), tools grouped by where they come
// from (built-ins, MCP servers) with which of them run without asking, skills and knowledge
// bases, the approval mode, budgets and what happens when the conversation is busy. Saving
// creates (`POST /v1/agents`) or replaces (`PUT /v1/agents/{name}`) the agent.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { NumberField, SelectField } from "./fields";
import { formatDate, formatNumber, formatUsd, t } from "./i18n";
import { ItemList } from "./item_list";
import { AgentVersions } from "./agent_versions";
import { type Choice, Picker } from "./picker";

type Profile = Schemas["AgentProfile"];
type Options = {
  models: Schemas["ModelInfo"][];
  default: string;
  tools: Schemas["ToolOut"][];
  skills: Schemas["SkillSummary"][];
  knowledge: Schemas["BaseList"]["bases"];
};

const APPROVALS: Schemas["ApprovalMode"][] = ["manual", "allow-list", "auto-run", "headless"];
const POLICIES: Schemas["BudgetPolicy"][] = ["stop", "interrupt", "warn"];
const BUSY: Schemas["WhenBusy"][] = ["enqueue", "reject", "interrupt"];
const MEMORY: Schemas["MemoryScope"][] = ["user", "agent"];

/** The options of the pickers, each list on its own: one that fails leaves its picker empty. */
async function options(): Promise<Options> {
  const quiet = <T,>(p: Promise<T>, none: T) => p.catch(() => none);
  const [models, tools, skills, knowledge] = await Promise.all([
    quiet(call(api.GET("/v1/models")), null),
    quiet(call(api.GET("/v1/tools")), null),
    quiet(call(api.GET("/v1/skills")), null),
    quiet(call(api.GET("/v1/knowledge")), null),
  ]);
  return {
    models: models?.models ?? [],
    default: models?.default ?? "",
    tools: tools?.tools ?? [],
    skills: skills?.skills ?? [],
    knowledge: knowledge?.bases ?? [],
  };
}

function toolChoices(tools: Schemas["ToolOut"][]): Choice[] {
  return tools.map((tool) => ({
    value: tool.identifier,
    label: tool.identifier,
    detail: tool.description || tool.apis.map((a) => a.name).join(", "),
    group: t(tool.kind === "mcp" ? "agents.tools_mcp" : tool.kind === "device" ? "agents.tools_device" : tool.kind === "custom" ? "agents.tools_custom" : "agents.tools_builtin"),
  }));
}

function Editor(props: {
  agent: Schemas["Agent"] | null;
  options: Options;
  /** What the last save said (kept by the list, which reads the saved agent again). */
  notice: string;
  onEdit: () => void;
  onSaved: (name: string) => void;
  onDeleted: () => void;
}) {
  const [name, setName] = useState(props.agent?.name ?? "");
  const [profile, setProfile] = useState<Profile>(props.agent?.config ?? {});
  const [error, setError] = useState<string | null>(null);
  const set = (patch: Partial<Profile>) => {
    props.onEdit();
    setProfile((cur) => ({ ...cur, ...patch }));
  };
  const o = props.options;
  const price = (m: Schemas["ModelInfo"]) =>
    t("agents.model_option", {
      id: m.id,
      window: formatNumber(m.context_window),
      input: formatUsd(m.prices.input),
      output: formatUsd(m.prices.output),
    });
  const tools = toolChoices(o.tools);
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const agent = props.agent
        ? await call(api.PUT("/v1/agents/{name}", { params: { path: { name: props.agent.name } }, body: profile }))
        : await call(api.POST("/v1/agents", { body: { name: name.trim(), config: profile } }));
      props.onSaved(agent.name);
    } catch (failure) {
      setError(describe(failure));
    }
  };
  const remove = async () => {
    if (!props.agent || !confirm(t("agents.delete_confirm", { name: props.agent.name }))) return;
    try {
      await call(api.DELETE("/v1/agents/{name}", { params: { path: { name: props.agent.name } } }));
      props.onDeleted();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <form class="editor" onSubmit={save} aria-labelledby="agent-heading">
      <h3 id="agent-heading">
        {props.agent ? t("agents.edit_title", { name: props.agent.name }) : t("agents.new_title")}
      </h3>
      {props.agent && (
        <p class="muted">
          {t("agents.version", { version: props.agent.version, date: formatDate(props.agent.updated_at) })}
        </p>
      )}
      {!props.agent && (
        <label class="field">
          <span>{t("agents.name")}</span>
          <input
            required
            pattern="[A-Za-z0-9_\-]{1,64}"
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
            aria-describedby="agent-name-hint"
          />
          <small id="agent-name-hint" class="muted">
            {t("agents.name_hint")}
          </small>
        </label>
      )}
      <label class="field">
        <span>{t("agents.model")}</span>
        <select value={profile.model ?? ""} onChange={(e) => set({ model: (e.target as HTMLSelectElement).value || undefined })}>
          <option value="">{t("agents.model_default", { model: o.default })}</option>
          {o.models.map((m) => (
            <option key={m.id} value={m.id}>
              {price(m)}
            </option>
          ))}
          {profile.model && !o.models.some((m) => m.id === profile.model) && (
            <option value={profile.model}>{t("agents.model_uncatalogued", { id: profile.model })}</option>
          )}
        </select>
      </label>
      <label class="field">
        <span>{t("agents.system_role")}</span>
        <textarea rows={4} value={profile.system_role ?? ""} onInput={(e) => set({ system_role: (e.target as HTMLTextAreaElement).value || undefined })} />
      </label>
      <label class="choice">
        <input
          type="checkbox"
          checked={profile.tools == null}
          onChange={(e) => set({ tools: (e.target as HTMLInputElement).checked ? undefined : [] })}
        />
        <span>{t("agents.all_tools")}</span>
      </label>
      {profile.tools != null && (
        <Picker label={t("agents.tools")} choices={tools} chosen={profile.tools} onChange={(v) => set({ tools: v })} empty={t("agents.no_tools")} />
      )}
      <SelectField
        label={t("agents.approval")}
        value={profile.approval ?? "manual"}
        options={APPROVALS}
        name={(a) => t(`agents.approval_${a.replace("-", "_") as "manual" | "allow_list" | "auto_run" | "headless"}`)}
        onChange={(approval) => set({ approval })}
      />
      <Picker
        label={t("agents.allow")}
        choices={tools.filter((c) => profile.tools == null || profile.tools.includes(c.value))}
        chosen={profile.allow ?? []}
        onChange={(v) => set({ allow: v.length ? v : undefined })}
        empty={t("agents.no_tools")}
      />
      <Picker
        label={t("agents.skills")}
        choices={o.skills.map((s) => ({ value: s.name, label: s.name, detail: s.description }))}
        chosen={profile.skills ?? []}
        onChange={(v) => set({ skills: v.length ? v : undefined })}
        empty={t("agents.no_skills")}
      />
      <Picker
        label={t("agents.knowledge")}
        choices={o.knowledge.map((k) => ({ value: k.name, label: k.name }))}
        chosen={profile.knowledge ?? []}
        onChange={(v) => set({ knowledge: v.length ? v : undefined })}
        empty={t("agents.no_knowledge")}
      />
      <SelectField
        label={t("agents.memory")}
        value={profile.memory ?? "user"}
        options={MEMORY}
        name={(m) => t(`agents.memory_${m}`)}
        onChange={(memory) => set({ memory })}
      />
      <label class="choice">
        <input type="checkbox" checked={profile.expose === true} onChange={(e) => set({ expose: (e.target as HTMLInputElement).checked || undefined })} />
        <span>{t("agents.expose")}</span>
      </label>
      <fieldset class="limits">
        <legend>{t("agents.budgets")}</legend>
        <NumberField label={t("agents.max_steps")} min={1} value={profile.max_steps} onChange={(max_steps) => set({ max_steps })} />
        <NumberField label={t("agents.token_limit")} min={1} value={profile.token_limit} onChange={(token_limit) => set({ token_limit })} />
        <NumberField label={t("agents.cost_limit")} min={0} step="0.01" value={profile.cost_limit} onChange={(cost_limit) => set({ cost_limit })} />
        <SelectField
          label={t("agents.budget_policy")}
          value={profile.budget_policy ?? "stop"}
          options={POLICIES}
          name={(p) => t(`agents.policy_${p}`)}
          onChange={(budget_policy) => set({ budget_policy })}
        />
        <SelectField
          label={t("agents.when_busy")}
          value={profile.when_busy ?? "enqueue"}
          options={BUSY}
          name={(b) => t(`agents.busy_${b}`)}
          onChange={(when_busy) => set({ when_busy })}
        />
      </fieldset>
      <Alert error={error} />
      <div class="row">
        <button type="submit" class="primary">
          {t("agents.save")}
        </button>
        {props.agent && (
          <button type="button" class="danger" onClick={() => void remove()}>
            {t("agents.delete")}
          </button>
        )}
        <span role="status" class="muted">
          {props.notice}
        </span>
      </div>
    </form>
  );
}

export function Agents() {
  const [agents, setAgents] = useState<Schemas["Agent"][] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [opts, setOpts] = useState<Options | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState("");
  const load = (then?: string | null) =>
    call(api.GET("/v1/agents"))
      .then((list) => {
        setAgents(list);
        if (then !== undefined) setOpen(then);
      })
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    void options().then(setOpts);
  }, []);
  const agent = agents?.find((a) => a.name === open) ?? null;
  return (
    <section class="agents screen" aria-labelledby="agents-title">
      <h2 id="agents-title">{t("agents.title")}</h2>
      <Alert error={error} />
      <div class="split">
        <ItemList
          items={agents?.map((a) => ({ key: a.name, title: a.name, detail: a.config.model ?? t("agents.default_model") })) ?? null}
          open={open}
          choose={(name) => {
            setNotice("");
            setOpen(name);
          }}
          newLabel={t("agents.new")}
          none={t("agents.none")}
        />
        {opts ? (
          <div class="task-detail">
          <Editor
            // A new editor for another agent, or the same one saved: its form starts from it
            // at once (an effect would reset it a frame later, under what was typed since).
            key={agent ? agent.name + "@" + agent.updated_at : "new"}
            agent={agent}
            options={opts}
            notice={notice}
            onEdit={() => setNotice("")}
            // Said once the list and the editor show it.
            onSaved={(n) => void load(n).then(() => setNotice(t("agents.saved")))}
            onDeleted={() => void load(null).then(() => setNotice(t("agents.deleted")))}
          />
          {agent && (
            <AgentVersions
              agent={agent}
              rolledBack={(n) => void load(n).then(() => setNotice(t("versions.rolled_back")))}
            />
          )}
          </div>
        ) : (
          <p class="muted">{t("conversation.loading")}</p>
        )}
      </div>
    </section>
  );
}
