// The list beside an editor (agents, groups, tasks): a "new" button, a note when there is
// nothing yet, and each item as a button with its title and one muted line, the open one
// marked current.
export type Item = { key: string; title: string; detail: string };

export function ItemList(props: {
  items: Item[] | null;
  open: string | null;
  choose: (key: string | null) => void;
  newLabel: string;
  none: string;
}) {
  return (
    <div class="list">
      <button type="button" class="new" aria-pressed={props.open === null} onClick={() => props.choose(null)}>
        {props.newLabel}
      </button>
      {props.items && props.items.length === 0 && <p class="muted">{props.none}</p>}
      <ul>
        {props.items?.map((i) => (
          <li key={i.key}>
            <button type="button" class="item" aria-current={props.open === i.key ? "true" : undefined} onClick={() => props.choose(i.key)}>
              <span class="title">{i.title}</span>
              <span class="muted">{i.detail}</span>
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
