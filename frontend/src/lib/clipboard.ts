/**
 * Copy text for the user. The async Clipboard API needs a secure context (https or localhost); a Tunelab on a LAN
 * address over http has none, so fall back to selecting the text in its input and the legacy copy command.
 */
export async function copyText(text: string, input?: HTMLInputElement | null): Promise<boolean> {
  try {
    if (window.isSecureContext && navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Permission refused: try the fallback.
  }
  if (!input) return false;
  input.focus();
  input.select();
  try {
    return document.execCommand("copy");
  } catch {
    return false;
  }
}
