// The form fields editors share: a labelled choice among a closed set of values, and a
// labelled number that may be left empty (not set).
import type { JSX } from "preact";

/** A number field's value: empty (or not a number) is "not set". */
export function num(value: string): number | undefined {
  const n = Number(value);
  return value.trim() === "" || !Number.isFinite(n) ? undefined : n;
}

export function SelectField<T extends string>(props: {
  label: string;
  value: T;
  options: readonly T[];
  /** What a value reads as. */
  name: (value: T) => string;
  onChange: (value: T) => void;
}): JSX.Element {
  return (
    <label class="field">
      <span>{props.label}</span>
      <select value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value as T)}>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {props.name(o)}
          </option>
        ))}
      </select>
    </label>
  );
}

export function NumberField(props: {
  label: string;
  value: number | null | undefined;
  min?: number;
  max?: number;
  step?: string;
  onChange: (value: number | undefined) => void;
}): JSX.Element {
  return (
    <label class="field">
      <span>{props.label}</span>
      <input
        type="number"
        min={props.min}
        max={props.max}
        step={props.step}
        value={props.value ?? ""}
        onInput={(e) => props.onChange(num((e.target as HTMLInputElement).value))}
      />
    </label>
  );
}
