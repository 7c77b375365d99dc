// The files a tool call produced (an interpreter's chart, a CSV it wrote, an HTML report),
// shown under its card: images inline, audio and video to play, CSV as a table, HTML in a sandboxed frame (scripts run
// in an opaque origin: no cookie of this app, no call to its API; the server's policy lets the
// page load nothing either), anything else as a link to save it. The result text names them
// after `--- artifacts ---`, one `art-… name (media type)` per line.
import { useEffect, useState } from "preact/hooks";
import { api, signedInBy } from "./api/client";
import { t } from "./i18n";

/** An artifact as a result names it. */
export type Artifact = { id: string; name: string; media: string };

/** The artifacts a tool result names. */
export function artifactsOf(text: string): Artifact[] {
  const at = text.indexOf("\n--- artifacts ---\n");
  if (at < 0) return [];
  return text
    .slice(at + "\n--- artifacts ---\n".length)
    .split("\n")
    .map((l) => /^(art-[0-9a-f]{32}) (.+) \(([^()]+)\)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ id: m[1], name: m[2], media: m[3] }));
}

/** Where an artifact's bytes are served. */
const contentUrl = (id: string) => `/v1/artifacts/${id}/content`;

/** An artifact's bytes, through the API client (its credentials, whichever kind). */
async function fetched(id: string, as: "blob" | "text"): Promise<Blob | string | null> {
  const r = await api.GET("/v1/artifacts/{artifact_id}/content", {
    params: { path: { artifact_id: id } },
    parseAs: as,
  });
  return r.response.ok ? ((r.data as Blob | string | undefined) ?? null) : null;
}

/** Rows of a CSV text (quoted fields with commas, quotes and line breaks), at most `max`. */
export function csvRows(text: string, max: number): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length && rows.length < max; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  if ((field || row.length) && rows.length < max) rows.push([...row, field]);
  return rows;
}

/** An object URL of an artifact's bytes while the component shows it (revoked after). */
function useBlobUrl(id: string): string | null {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let url: string | null = null;
    fetched(id, "blob").then((b) => {
      if (b instanceof Blob) {
        url = URL.createObjectURL(b);
        setSrc(url);
      }
    });
    return () => {
      if (url) URL.revokeObjectURL(url);
    };
  }, [id]);
  return src;
}

function Image(props: { a: Artifact }) {
  const src = useBlobUrl(props.a.id);
  return src ? <img class="artifact-image" src={src} alt={props.a.name} /> : <p class="muted">{props.a.name}</p>;
}

const ROWS = 51;

function Table(props: { a: Artifact }) {
  const [rows, setRows] = useState<string[][] | null>(null);
  useEffect(() => {
    fetched(props.a.id, "text").then((s) => setRows(typeof s === "string" ? csvRows(s, ROWS) : []));
  }, [props.a.id]);
  if (!rows) return <p class="muted">{props.a.name}</p>;
  const [head, ...body] = rows;
  return (
    <div class="artifact-table">
      <table>
        <caption>{props.a.name}</caption>
        {head && (
          <thead>
            <tr>
              {head.map((h, i) => (
                <th key={i} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
        )}
        <tbody>
          {body.slice(0, ROWS - 1).map((r, i) => (
            <tr key={i}>
              {r.map((c, j) => (
                <td key={j}>{c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length >= ROWS && <p class="muted">{t("artifact.more_rows", { n: ROWS - 1 })}</p>}
    </div>
  );
}

/** A page's policy when it cannot come from the server (a frame of fetched text). */
const FRAME_POLICY =
  "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'none'";

function Page(props: { a: Artifact }) {
  // With a bearer token the frame cannot fetch the page itself: it gets the text, under the
  // same policy as a meta tag.
  const byToken = signedInBy() === "token";
  const [doc, setDoc] = useState<string | null>(null);
  useEffect(() => {
    if (!byToken) return;
    fetched(props.a.id, "text").then((s) => {
      if (typeof s === "string") setDoc(`<meta http-equiv="Content-Security-Policy" content="${FRAME_POLICY}">` + s);
    });
  }, [props.a.id, byToken]);
  return (
    <iframe
      class="artifact-frame"
      title={props.a.name}
      sandbox="allow-scripts"
      referrerpolicy="no-referrer"
      {...(byToken ? { srcdoc: doc ?? "" } : { src: contentUrl(props.a.id) })}
    />
  );
}

function Sound(props: { a: Artifact }) {
  const src = useBlobUrl(props.a.id);
  return src ? <audio class="artifact-audio" controls src={src} aria-label={props.a.name} /> : <p class="muted">{props.a.name}</p>;
}

function Film(props: { a: Artifact }) {
  const src = useBlobUrl(props.a.id);
  return src ? (
    <video class="artifact-video" controls preload="metadata" src={src} aria-label={props.a.name} />
  ) : (
    <p class="muted">{props.a.name}</p>
  );
}

function Link(props: { a: Artifact }) {
  const save = async () => {
    const b = await fetched(props.a.id, "blob");
    if (!(b instanceof Blob)) return;
    const url = URL.createObjectURL(b);
    const link = document.createElement("a");
    link.href = url;
    link.download = props.a.name.split("/").pop() ?? props.a.name;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <button type="button" class="artifact-save" onClick={save}>
      {t("artifact.save", { name: props.a.name })}
    </button>
  );
}

/** The artifacts of one call. */
export function Artifacts(props: { list: Artifact[] }) {
  if (props.list.length === 0) return null;
  return (
    <div class="artifacts">
      {props.list.map((a) => (
        <figure key={a.id} class="artifact" data-artifact={a.id} data-media={a.media}>
          {a.media.startsWith("image/") && a.media !== "image/svg+xml" ? (
            <Image a={a} />
          ) : a.media === "text/csv" ? (
            <Table a={a} />
          ) : a.media === "text/html" ? (
            <Page a={a} />
          ) : a.media.startsWith("audio/") ? (
            <Sound a={a} />
          ) : a.media === "video/mp4" || a.media === "video/webm" ? (
            <Film a={a} />
          ) : null}
          <figcaption>
            <Link a={a} />
          </figcaption>
        </figure>
      ))}
    </div>
  );
}
