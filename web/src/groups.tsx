// Groups: agents that talk in rounds under a supervisor, one operation tree with one budget.
// An editor picks the members among your agents (in speaking order), who speaks next (the
// supervisor's model, in turn, or whoever the last message names), the supervisor's model,
// the rounds and the budget; the composer's agent picker also runs groups.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { NumberField, SelectField } from "./fields";
import { t } from "./i18n";
import { ItemList } from "./item_list";
import { Picker } from "./picker";

type Profile = Schemas["GroupProfile"];
const POLICIES: Schemas["SpeakerPolicy"][] = ["model", "round_robin", "mentioned_first"];

function Editor(props: { group: Schemas["Group"] | null; agents: string[]; models: string[]; notice: string; saved: (name: string | null, notice: string) => void }) {
  const [name, setName] = useState(props.group?.name ?? "");
  const [profile, setProfile] = useState<Profile>(props.group?.config ?? { members: [] });
  const [error, attempt] = useAttempt();
  const set = (patch: Partial<Profile>) => setProfile((cur) => ({ ...cur, ...patch }));
  const g = props.group;
  const save = (e: Event) => {
    e.preventDefault();
    void attempt(async () => {
      const made = g
        ? await call(api.PUT("/v1/groups/{name}", { params: { path: { name: g.name } }, body: profile }))
        : await call(api.POST("/v1/groups", { body: { name: name.trim(), config: profile } }));
      props.saved(made.name, t("agents.saved"));
    });
  };
  const remove = () => {
    if (!g || !confirm(t("groups.delete_confirm", { name: g.name }))) return;
    void attempt(async () => {
      await call(api.DELETE("/v1/groups/{name}", { params: { path: { name: g.name } } }));
      props.saved(null, t("agents.deleted"));
    });
  };
  return (
    <form class="editor" onSubmit={save} aria-labelledby="group-heading">
      <h3 id="group-heading">{g ? t("groups.edit_title", { name: g.name }) : t("groups.new_title")}</h3>
      {!g && (
        <label class="field">
          <span>{t("agents.name")}</span>
          <input required pattern="[A-Za-z0-9_\-]{1,64}" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
      )}
      <Picker
        label={t("groups.members")}
        choices={props.agents.map((a) => ({ value: a, label: a }))}
        chosen={profile.members}
        onChange={(members) => set({ members })}
        empty={t("groups.no_agents")}
      />
      {profile.members.length > 0 && <p class="muted order">{t("groups.order", { members: profile.members.join(" → ") })}</p>}
      <SelectField
        label={t("groups.policy")}
        value={profile.policy ?? "model"}
        options={POLICIES}
        name={(p) => t(`groups.policy_${p}`)}
        onChange={(policy) => set({ policy })}
      />
      {(profile.policy ?? "model") === "model" && (
        <label class="field">
          <span>{t("groups.supervisor")}</span>
          <select value={profile.model ?? ""} onChange={(e) => set({ model: (e.target as HTMLSelectElement).value || undefined })}>
            <option value="">{t("groups.supervisor_default")}</option>
            {props.models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
      )}
      <label class="field">
        <span>{t("groups.instructions")}</span>
        <textarea rows={3} value={profile.instructions ?? ""} onInput={(e) => set({ instructions: (e.target as HTMLTextAreaElement).value || undefined })} />
      </label>
      <fieldset class="limits">
        <legend>{t("agents.budgets")}</legend>
        <NumberField label={t("groups.max_rounds")} min={1} max={50} value={profile.max_rounds} onChange={(max_rounds) => set({ max_rounds })} />
        <NumberField label={t("agents.token_limit")} min={1} value={profile.token_limit} onChange={(token_limit) => set({ token_limit })} />
        <NumberField label={t("agents.cost_limit")} min={0} step="0.01" value={profile.cost_limit} onChange={(cost_limit) => set({ cost_limit })} />
      </fieldset>
      <Alert error={error} />
      <div class="row">
        <button type="submit" class="primary">
          {t("agents.save")}
        </button>
        {g && (
          <button type="button" class="danger" onClick={remove}>
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

export function Groups() {
  const [groups, setGroups] = useState<Schemas["Group"][] | null>(null);
  const [agents, setAgents] = useState<string[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState("");
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/groups"))
      .then(setGroups)
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    call(api.GET("/v1/agents"))
      .then((l) => setAgents(l.map((a) => a.name)))
      .catch(() => setAgents([]));
    call(api.GET("/v1/models"))
      .then((m) => setModels(m.models.map((x) => x.id)))
      .catch(() => setModels([]));
  }, []);
  const choose = (name: string | null) => {
    setNotice("");
    setOpen(name);
  };
  const group = groups?.find((g) => g.name === open) ?? null;
  return (
    <section class="groups screen" aria-labelledby="groups-title">
      <h2 id="groups-title">{t("groups.title")}</h2>
      <Alert error={error} />
      <div class="split">
        <ItemList
          items={groups?.map((g) => ({ key: g.name, title: g.name, detail: g.config.members.join(", ") })) ?? null}
          open={open}
          choose={choose}
          newLabel={t("groups.new")}
          none={t("groups.none")}
        />
        <Editor
          key={group ? group.name + "@" + group.updated_at : "new"}
          group={group}
          agents={agents}
          models={models}
          notice={notice}
          saved={(name, said) => {
            setOpen(name);
            // Said once the list and the editor show it.
            void load().then(() => setNotice(said));
          }}
        />
      </div>
    </section>
  );
}
