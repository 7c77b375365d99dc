// What went wrong with the last thing a screen asked of the server, in the one shape every
// screen shows it (an alert, read out by screen readers), and the helper that keeps it.
import { useState } from "preact/hooks";
import { describe } from "./failure";

export function Alert(props: { error: string | null }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error}
    </p>
  );
}

/** The failure to show, and `attempt`: forget the last one, run `work`, keep what went wrong
 * in the app's words; whether it succeeded. */
export function useAttempt(): [string | null, (work: () => Promise<unknown>) => Promise<boolean>, (e: string | null) => void] {
  const [error, setError] = useState<string | null>(null);
  const attempt = async (work: () => Promise<unknown>) => {
    setError(null);
    try {
      await work();
      return true;
    } catch (failure) {
      setError(describe(failure));
      return false;
    }
  };
  return [error, attempt, setError];
}
