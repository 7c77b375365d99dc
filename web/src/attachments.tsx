// Files sent with a message: chosen with the picker, dropped on the message box or pasted
// into it (a screenshot, say), uploaded at once (`POST /v1/files`) and shown as chips until
// the message goes (images previewed); the message then names them by id.
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { t } from "./i18n";

/** An uploaded file, with a preview while it is on screen (images only). */
export type Attached = { file: Schemas["FileOut"]; preview: string | null };

/** Upload `file`; an image gets a preview URL (revoked when its chip goes). */
export async function upload(file: File): Promise<Attached> {
  const stored = await call(
    api.POST("/v1/files", {
      body: { file: file as unknown as string, purpose: "user_data" },
      bodySerializer: (b) => {
        const form = new FormData();
        form.append("purpose", b.purpose ?? "user_data");
        // A pasted image has no name of its own.
        form.append("file", file, file.name || "pasted.png");
        return form;
      },
    }),
  );
  return { file: stored, preview: file.type.startsWith("image/") ? URL.createObjectURL(file) : null };
}

/** The files of a paste or drop. */
export function filesOf(data: DataTransfer | null): File[] {
  return data ? [...data.files] : [];
}

export function AttachedList(props: { attached: Attached[]; remove: (id: string) => void }) {
  useEffect(
    () => () => {
      for (const a of props.attached) if (a.preview) URL.revokeObjectURL(a.preview);
    },
    [],
  );
  if (props.attached.length === 0) return null;
  return (
    <ul class="attached" aria-label={t("attach.list")}>
      {props.attached.map((a) => (
        <li key={a.file.id} class="chip" data-file={a.file.id}>
          {a.preview && <img src={a.preview} alt={t("attach.preview", { name: a.file.filename })} />}
          <span>{a.file.filename}</span>
          <button type="button" aria-label={t("attach.remove", { name: a.file.filename })} onClick={() => props.remove(a.file.id)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** The picker button: a label over a hidden file input, usable by keyboard. */
export function AttachButton(props: { disabled: boolean; add: (files: File[]) => void }) {
  const [id] = useState(() => "attach-" + Math.random().toString(36).slice(2));
  return (
    <>
      <input
        id={id}
        type="file"
        multiple
        class="visually-hidden"
        disabled={props.disabled}
        onChange={(e) => {
          const input = e.target as HTMLInputElement;
          props.add([...(input.files ?? [])]);
          input.value = "";
        }}
      />
      <label for={id} class="attach" title={t("attach.hint")}>
        {t("attach.open")}
      </label>
    </>
  );
}
