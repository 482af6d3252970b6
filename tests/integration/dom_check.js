// What a page holds that it should not, were any text it shows taken as markup, code or a link.
// Run in the page by tests/integration/browser_kit.py (its return value goes back to the test).
const own = new Set(["/static/monitor.js"]);
const scripts = Array.from(document.scripts, (each) =>
  new URL(each.src || "inline:", location.href));
const handlers = Array.from(document.querySelectorAll("*")).filter((each) =>
  Array.from(each.attributes).some((attribute) => attribute.name.startsWith("on")));
const linking = ["href", "src", "action", "data", "formaction"];
const scripted = Array.from(document.querySelectorAll(linking.map((name) => `[${name}]`).join(",")))
  .filter((each) => linking.some((name) =>
    (each.getAttribute(name) || "").trim().toLowerCase().startsWith("javascript:")));
const foreign = [
  "img", "svg", "iframe", "object", "embed", "math", "template", "style", "meta[http-equiv]",
  "base", "link[rel=stylesheet]:not([href='/static/monitor.css'])",
];
return {
  xss: window.__xss === undefined ? null : String(window.__xss),
  foreign_scripts: scripts
    .filter((url) => !own.has(url.pathname) || url.origin !== location.origin).map(String),
  handlers: handlers.map((each) => each.outerHTML.slice(0, 120)),
  scripted: scripted.map((each) => each.outerHTML.slice(0, 120)),
  injected: document.querySelectorAll(foreign.join(",")).length,
  text: document.body.innerText,
};
