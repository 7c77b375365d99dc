// A searchable multi-select: checkboxes in labelled groups, a filter box, and a count of what is
// chosen; used for tools, skills and knowledge bases, where a comma-separated text box made
// people guess names.
import { useState } from "preact/hooks";
import { t } from "./i18n";

export type Choice = { value: string; label: string; detail?: string; group?: string };

export function Picker(props: {
  label: string;
  choices: Choice[];
  chosen: string[];
  onChange: (chosen: string[]) => void;
  /** Shown when there is nothing to choose. */
  empty: string;
}) {
  const [filter, setFilter] = useState("");
  const needle = filter.trim().toLowerCase();
  const shown = props.choices.filter(
    (c) => !needle || (c.value + " " + c.label + " " + (c.detail ?? "")).toLowerCase().includes(needle),
  );
  const groups = [...new Set(shown.map((c) => c.group ?? ""))];
  const toggle = (value: string, on: boolean) =>
    props.onChange(on ? [...props.chosen, value] : props.chosen.filter((v) => v !== value));
  return (
    <fieldset class="picker">
      <legend>
        {props.label} <span class="muted">{t("picker.chosen", { count: props.chosen.length })}</span>
      </legend>
      {props.choices.length === 0 ? (
        <p class="muted">{props.empty}</p>
      ) : (
        <>
          {props.choices.length > 6 && (
            <input
              type="search"
              class="filter"
              aria-label={t("picker.filter", { what: props.label })}
              placeholder={t("picker.filter", { what: props.label })}
              value={filter}
              onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
            />
          )}
          {groups.map((g) => (
            <div class="group" key={g} role="group" aria-label={g || props.label}>
              {g && <p class="group-name">{g}</p>}
              {shown
                .filter((c) => (c.group ?? "") === g)
                .map((c) => (
                  <label class="choice" key={c.value}>
                    <input
                      type="checkbox"
                      value={c.value}
                      checked={props.chosen.includes(c.value)}
                      onChange={(e) => toggle(c.value, (e.target as HTMLInputElement).checked)}
                    />
                    <span>
                      <span class="name">{c.label}</span>
                      {c.detail && <span class="detail muted">{c.detail}</span>}
                    </span>
                  </label>
                ))}
            </div>
          ))}
          {shown.length === 0 && <p class="muted">{t("picker.none_match", { filter: filter.trim() })}</p>}
        </>
      )}
    </fieldset>
  );
}
