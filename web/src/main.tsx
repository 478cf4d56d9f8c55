import { render } from "preact";
import { App } from "./app.tsx";
import { takeSignInLink } from "./sign-in-link.ts";
import "./styles.css";

// Before the first render: a sign-in link's token leaves the address bar before anything reads it.
takeSignInLink();
render(<App />, document.getElementById("app")!);
