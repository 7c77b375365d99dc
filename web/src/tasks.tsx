// Tasks: your tasks listed with their state; one opened shows an editor (title, instruction,
// agent, when it runs: by hand, every interval or on a cron pattern in a zone, a cap on runs,
// the tasks it waits for, what its runs do with a question) and what it did: the next due
// times, its runs with their outcome, cost, brief and handoff, and the fires it skipped with
// why. Pause, resume, run now and delete are one click each.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { SelectField } from "./fields";
import { formatDate, formatUsd, t } from "./i18n";
import { ItemList } from "./item_list";
import { Picker } from "./picker";

type Task = Schemas["TaskView"];
type When = "manual" | "every" | "cron";
const WHEN: readonly When[] = ["manual", "every", "cron"];
const QUESTIONS: readonly Schemas["Questions"][] = ["decline", "brief"];

/** Seconds as the interval syntax writes them (`90m` → `1h30m` is also fine, both parse). */
function interval(secs: number): string {
  if (secs % 86_400 === 0) return secs / 86_400 + "d";
  if (secs % 3600 === 0) return secs / 3600 + "h";
  if (secs % 60 === 0) return secs / 60 + "m";
  return secs + "s";
}

/** What the form edits, from a task (or blank). */
function draft(task: Task | null) {
  const a = task?.automation;
  return {
    title: task?.title ?? "",
    instruction: task?.instruction ?? "",
    agent: task?.agent ?? "",
    when: (a?.mode === "heartbeat" ? "every" : a?.mode === "schedule" ? "cron" : "manual") as When,
    every: a?.mode === "heartbeat" ? interval(a.every_secs) : "1h",
    cron: a?.mode === "schedule" ? a.pattern : "0 9 * * 1-5",
    tz: a?.mode === "schedule" ? a.tz : Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
    max: task?.max_executions != null ? String(task.max_executions) : "",
    depends: task?.depends_on ?? [],
    questions: (task?.questions ?? "decline") as Schemas["Questions"],
  };
}
type Draft = ReturnType<typeof draft>;

/** The body of a create or an edit. */
function body(d: Draft): Schemas["TaskInput"] {
  const out: Schemas["TaskInput"] = {
    title: d.title.trim(),
    instruction: d.instruction.trim(),
    agent: d.agent || undefined,
    depends_on: d.depends,
    questions: d.questions,
  };
  if (d.when === "manual") out.manual_only = true;
  if (d.when === "every") out.every = d.every.trim();
  if (d.when === "cron") {
    out.cron = d.cron.trim();
    out.tz = d.tz.trim() || "UTC";
  }
  if (d.when !== "manual" && d.max.trim()) out.max_executions = Number(d.max);
  return out;
}

function History(props: { id: string; version: number }) {
  const [detail, setDetail] = useState<Schemas["TaskDetail"] | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    call(api.GET("/v1/tasks/{id}", { params: { path: { id: props.id } } }))
      .then((d) => {
        if (!live) return;
        setDetail(d);
        // A run under way: read again until it ends.
        if (d.runs.some((r) => !r.finished_at)) timer = setTimeout(() => setTick((n) => n + 1), 1000);
      })
      .catch(() => live && setDetail(null));
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.id, props.version, tick]);
  if (!detail) return null;
  const skipped = detail.deliveries.filter((d) => d.status === "skipped");
  return (
    <section class="panel history" aria-labelledby="history-title">
      <h3 id="history-title">{t("tasks.history")}</h3>
      {detail.next.length > 0 && (
        <p class="muted">{t("tasks.next", { times: detail.next.slice(0, 3).map(formatDate).join(", ") })}</p>
      )}
      {detail.runs.length === 0 ? (
        <p class="muted">{t("tasks.no_runs")}</p>
      ) : (
        <ol class="runs">
          {detail.runs.map((r) => (
            <li key={r.operation_id} class={"run " + (r.outcome ?? "running")}>
              <p>
                <strong>{t(`tasks.trigger_${r.trigger}`)}</strong> · {formatDate(r.started_at)} ·{" "}
                {r.outcome ? (
                  <>
                    {t("tasks.ended")} <code>{r.outcome}</code>
                  </>
                ) : (
                  t("tasks.running")
                )} · {formatUsd(Number(r.cost))}
              </p>
              {r.brief && <p class="brief">{r.brief}</p>}
              {r.handoff && <p class="muted">{t("tasks.handoff", { title: r.handoff.title })}</p>}
            </li>
          ))}
        </ol>
      )}
      {skipped.length > 0 && (
        <>
          <h4>{t("tasks.skipped")}</h4>
          <ul class="rows">
            {skipped.map((d) => (
              <li key={d.due_at + d.generation}>
                {formatDate(d.due_at)}: {d.reason ?? ""}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function Editor(props: {
  task: Task | null;
  tasks: Task[];
  agents: string[];
  /** What the last action said (kept by the list, which reads the task again after it). */
  notice: string;
  said: (notice: string) => void;
  changed: (id: string | null) => Promise<void>;
}) {
  const [d, setD] = useState<Draft>(draft(props.task));
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const set = (patch: Partial<Draft>) => {
    props.said("");
    setD((cur) => ({ ...cur, ...patch }));
  };
  /** Do `what`, whose answer is the task to show after it (none once deleted). */
  const act = async (what: () => Promise<string | null>, done: string) => {
    setError(null);
    try {
      const shown = await what();
      // Said once the list and the editor show it.
      await props.changed(shown);
      props.said(done);
      setVersion((v) => v + 1);
    } catch (failure) {
      setError(describe(failure));
    }
  };
  const id = props.task?.id;
  const save = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const saved = id
        ? await call(api.PATCH("/v1/tasks/{id}", { params: { path: { id } }, body: body(d) }))
        : await call(api.POST("/v1/tasks", { body: body(d) as Schemas["NewTaskInput"] }));
      return saved.id;
    }, t("tasks.saved"));
  };
  return (
    <div class="task-detail">
      <form class="editor" onSubmit={save} aria-labelledby="task-heading">
        <h3 id="task-heading">{props.task ? t("tasks.edit_title", { title: props.task.title }) : t("tasks.new_title")}</h3>
        {props.task && (
          <p class="muted">
            {t(`tasks.status_${props.task.status ?? "active"}`)}
            {props.task.status_reason ? " · " + props.task.status_reason : ""}
          </p>
        )}
        <label class="field">
          <span>{t("tasks.title_field")}</span>
          <input required value={d.title} onInput={(e) => set({ title: (e.target as HTMLInputElement).value })} />
        </label>
        <label class="field">
          <span>{t("tasks.instruction")}</span>
          <textarea required rows={4} value={d.instruction} onInput={(e) => set({ instruction: (e.target as HTMLTextAreaElement).value })} />
        </label>
        <label class="field">
          <span>{t("composer.agent")}</span>
          <select value={d.agent} onChange={(e) => set({ agent: (e.target as HTMLSelectElement).value })}>
            <option value="">{t("composer.default_agent")}</option>
            {props.agents.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <fieldset class="limits">
          <legend>{t("tasks.when")}</legend>
          <SelectField label={t("tasks.when_mode")} value={d.when} options={WHEN} name={(w) => t(`tasks.when_${w}`)} onChange={(when) => set({ when })} />
          {d.when === "every" && (
            <label class="field">
              <span>{t("tasks.every")}</span>
              <input required value={d.every} onInput={(e) => set({ every: (e.target as HTMLInputElement).value })} />
            </label>
          )}
          {d.when === "cron" && (
            <>
              <label class="field">
                <span>{t("tasks.cron")}</span>
                <input required value={d.cron} onInput={(e) => set({ cron: (e.target as HTMLInputElement).value })} />
              </label>
              <label class="field">
                <span>{t("tasks.tz")}</span>
                <input value={d.tz} onInput={(e) => set({ tz: (e.target as HTMLInputElement).value })} />
              </label>
            </>
          )}
          {d.when !== "manual" && (
            <label class="field">
              <span>{t("tasks.max")}</span>
              <input type="number" min={1} value={d.max} onInput={(e) => set({ max: (e.target as HTMLInputElement).value })} />
            </label>
          )}
          <SelectField
            label={t("tasks.questions")}
            value={d.questions}
            options={QUESTIONS}
            name={(q) => t(`tasks.questions_${q}`)}
            onChange={(questions) => set({ questions })}
          />
        </fieldset>
        <Picker
          label={t("tasks.depends")}
          choices={props.tasks.filter((x) => x.id !== id).map((x) => ({ value: x.id, label: x.title }))}
          chosen={d.depends}
          onChange={(v) => set({ depends: v })}
          empty={t("tasks.no_other")}
        />
        <Alert error={error} />
        <div class="row">
          <button type="submit" class="primary">
            {t("agents.save")}
          </button>
          {id && props.task?.status === "paused" && (
            <button type="button" class="small resume" onClick={() => void act(() => call(api.POST("/v1/tasks/{id}/resume", { params: { path: { id } } })).then(() => id), t("tasks.resumed"))}>
              {t("tasks.resume")}
            </button>
          )}
          {id && props.task?.status === "active" && (
            <button type="button" class="small pause" onClick={() => void act(() => call(api.POST("/v1/tasks/{id}/pause", { params: { path: { id } } })).then(() => id), t("tasks.paused"))}>
              {t("tasks.pause")}
            </button>
          )}
          {id && (
            <button type="button" class="small run" onClick={() => void act(() => call(api.POST("/v1/tasks/{id}/run", { params: { path: { id } } })).then(() => id), t("tasks.started"))}>
              {t("tasks.run")}
            </button>
          )}
          {id && (
            <button
              type="button"
              class="danger small"
              onClick={() => {
                if (confirm(t("tasks.delete_confirm", { title: props.task?.title ?? "" })))
                  void act(() => call(api.DELETE("/v1/tasks/{id}", { params: { path: { id } } })).then(() => null), t("tasks.deleted"));
              }}
            >
              {t("agents.delete")}
            </button>
          )}
          <span role="status" class="muted">
            {props.notice}
          </span>
        </div>
      </form>
      {id && <History id={id} version={version} />}
    </div>
  );
}

export function Tasks() {
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [agents, setAgents] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState("");
  const [error, setError] = useState<string | null>(null);
  const choose = (id: string | null) => {
    setNotice("");
    setOpen(id);
  };
  const load = () =>
    call(api.GET("/v1/tasks"))
      .then(setTasks)
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    call(api.GET("/v1/agents"))
      .then((list) => setAgents(list.map((a) => a.name)))
      .catch(() => {
        // Runs go to the default agent without the list.
      });
  }, []);
  const task = tasks?.find((x) => x.id === open) ?? null;
  return (
    <section class="tasks screen" aria-labelledby="tasks-title">
      <h2 id="tasks-title">{t("tasks.title")}</h2>
      <Alert error={error} />
      <div class="split">
        <ItemList
          items={tasks?.map((x) => ({ key: x.id, title: x.title, detail: t(`tasks.status_${x.status ?? "active"}`) })) ?? null}
          open={open}
          choose={choose}
          newLabel={t("tasks.new")}
          none={t("tasks.none")}
        />
        <Editor
          // A new editor for another task, or the same one changed: its form starts from it
          // at once (an effect would reset it a frame later, under what was typed since).
          key={task ? task.id + "@" + task.updated_at : "new"}
          task={task}
          tasks={tasks ?? []}
          agents={agents}
          notice={notice}
          said={setNotice}
          changed={async (id) => {
            setOpen(id);
            await load();
          }}
        />
      </div>
    </section>
  );
}
