import type { ComponentChildren } from "preact";

/** A password-type field for a credential pasted once (an API key, the admin token), with its help line. */
export function SecretField({
  id,
  label,
  value,
  onInput,
  help,
}: {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  help: ComponentChildren;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        name={id}
        type="password"
        autoComplete="off"
        spellcheck={false}
        required
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-describedby={`${id}-help`}
      />
      <p id={`${id}-help`} class="help">
        {help}
      </p>
    </div>
  );
}
