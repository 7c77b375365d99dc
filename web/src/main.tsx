import { render } from "preact";
import { App } from "./app";
import { currentLocale } from "./i18n";
import { applyTheme } from "./theme";
import "./styles.css";

document.documentElement.lang = currentLocale();
applyTheme();
const root = document.getElementById("root");
if (root) render(<App />, root);
