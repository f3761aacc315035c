/** The page's small DOM helpers: elements it must have, and text put in as text, never as markup. */

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new TypeError(`the page has no #${id}`);
  return element as T;
}

export function cell(text: string, className?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (className !== undefined) td.className = className;
  return td;
}

/** An element with its class and text. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (className !== undefined) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

/**
 * Asks a question in the page's own `<dialog>` (not `window.confirm`, which blocks the page and
 * which a browser may suppress): resolves true when `confirm` is pressed, false on cancel or Escape.
 */
export function ask(dialog: HTMLDialogElement, confirm: HTMLButtonElement): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (answer: boolean) => {
      confirm.removeEventListener('click', onConfirm);
      dialog.removeEventListener('close', onClose);
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const onConfirm = () => done(true);
    const onClose = () => done(false);
    confirm.addEventListener('click', onConfirm);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
  });
}
